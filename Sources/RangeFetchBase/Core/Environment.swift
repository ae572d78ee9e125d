#if canImport(Glibc)
import Glibc
#endif

/// The process's environment variables, as the settings that read them see it.
package enum Environment {
    /// The variable's value; `nil` when it is unset or empty (an empty one means "not set" to
    /// curl and AWS's tools alike).
    public static func value(_ name: String) -> String? {
        guard let value = getenv(name), value.pointee != 0 else { return nil }
        return String(cString: value)
    }
}
