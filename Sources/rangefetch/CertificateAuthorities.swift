import CFileShims
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import RangeFetch

/// The CA certificates a download trusts, from `--cacert` or the variables curl and OpenSSL read:
///
/// | given                                   | trusted                                             |
/// |-----------------------------------------|-----------------------------------------------------|
/// | `--cacert FILE`                         | FILE only (the variables are not read)              |
/// | `CURL_CA_BUNDLE` or `SSL_CERT_FILE`     | that file                                           |
/// | both, naming different files            | both: one bundle of the two (a file with no name)   |
/// | `SSL_CERT_DIR`                          | that hashed directory too (`openssl rehash`)        |
/// | none                                    | the system's (libcurl's default)                    |
///
/// Both files are trusted because a machine-wide `CURL_CA_BUNDLE` (the system bundle, as many
/// images set) would otherwise hide the `SSL_CERT_FILE` a user sets for one command, and
/// the reverse.
enum CertificateAuthorities {
    /// Applies the table to `request`.
    static func apply(cacert: String?, to request: inout RequestOptions) {
        if let cacert {
            request.caCertificatePath = cacert
            return
        }
        var files: [String] = []
        for name in ["CURL_CA_BUNDLE", "SSL_CERT_FILE"] {
            if let path = Environment.value(name), !files.contains(path) { files.append(path) }
        }
        request.caCertificateDirectory = Environment.value("SSL_CERT_DIR")
        request.caCertificatePath = files.count > 1 ? (bundle(of: files) ?? files.last) : files.first
    }

    /// A file with no name holding every readable file of `paths` one after the other, as a path
    /// that stays valid while the process runs (`/proc/self/fd/N`); nil when none can be made.
    private static func bundle(of paths: [String]) -> String? {
        var text = ""
        for path in paths {
            guard let contents = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            text += contents.hasSuffix("\n") ? contents : contents + "\n"
        }
        let directory = Environment.value("TMPDIR") ?? "/tmp"
        let descriptor = cfs_open_anonymous(directory)
        guard descriptor >= 0 else { return nil }
        let bundle = FileDescriptor(descriptor, path: "the CA bundle")
        do {
            try bundle.writeAll(Array(text.utf8))
        } catch {
            bundle.close()
            return nil
        }
        // Left open on purpose: the path is the descriptor's, for every request of this run.
        return "/proc/self/fd/\(descriptor)"
    }
}
