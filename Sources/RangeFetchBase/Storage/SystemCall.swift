#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call: which C function, on which path, and the errno it left.
/// `package`: ``FileDescriptor``'s calls, which the CLI uses too, throw it.
package struct SystemCallError: Error, Sendable, CustomStringConvertible {
    package var function: String
    package var path: String
    package var errno: Int32
    /// What to say instead of the call and its errno, when the failure is a refusal of ours
    /// (``DirectoryWalk``'s link not followed): said with ``DownloadError/Remedy/removeStrayFile``.
    package var explanation: String? = nil

    package var description: String {
        explanation ?? "\(function) \(path): \(String(cString: strerror(errno)))"
    }

    /// The same failure as a user-facing download error.
    package var downloadError: DownloadError {
        if let explanation { return DownloadError(.fileSystem(errno: errno), explanation, remedy: .removeStrayFile) }
        let remedy: DownloadError.Remedy? = switch errno {
        case ENOSPC, EDQUOT: .freeSpaceThenRunAgain
        case EACCES, EPERM, EROFS: .chooseWritableLocation
        default: nil
        }
        return DownloadError(.fileSystem(errno: errno), "\(self)", remedy: remedy)
    }

    package init(function: String, path: String, errno: Int32, explanation: String? = nil) {
        self.function = function
        self.path = path
        self.errno = errno
        self.explanation = explanation
    }
}

/// The one funnel for raw file-system calls: retries on `EINTR` and turns `-1` into a
/// ``SystemCallError`` naming the function, path and errno.
///
/// Tests inject failures (`ENOSPC`, `EIO`) through ``FaultInjection``.
package enum SystemCall {
    /// Runs `body` (a C call returning -1 and setting errno on failure) until it does not fail
    /// with `EINTR`.
    @discardableResult
    package static func check<Result: BinaryInteger>(
        _ function: String, path: String, _ body: () -> Result
    ) throws(SystemCallError) -> Result {
        while true {
            if let injected = FaultInjection.errno(for: function) {
                throw SystemCallError(function: function, path: path, errno: injected)
            }
            let result = body()
            if result != -1 { return result }
            let error = Glibc.errno
            if error == EINTR { continue }
            throw SystemCallError(function: function, path: path, errno: error)
        }
    }
}

/// Lets tests make a named system call fail with a chosen errno (`RANGEFETCH_FAULT=pwrite:28`).
/// A plain name also matches its variants (`pwrite` matches `pwrite(O_DIRECT)`; naming the
/// variant matches it alone). Read once from the environment; off unless set.
package enum FaultInjection {
    private static let rule: (function: String, errno: Int32)? = {
        guard let raw = getenv("RANGEFETCH_FAULT") else { return nil }
        let parts = String(cString: raw).split(separator: ":")
        guard parts.count == 2, let value = Int32(parts[1]) else { return nil }
        return (String(parts[0]), value)
    }()

    package static func errno(for function: String) -> Int32? {
        guard let rule, function == rule.function || function.hasPrefix(rule.function + "(") else { return nil }
        return rule.errno
    }
}
