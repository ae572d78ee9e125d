#if canImport(Glibc)
import Glibc
#endif

/// The files a download uses: the final path, `FINAL.part` for bytes in flight and
/// `FINAL.part.rfjournal` for the resume record.
struct OutputPaths: Sendable {
    let final: String
    var partial: String { final + ".part" }
    var journal: String { final + ".part.rfjournal" }
    /// Where bytes that failed verification are kept for inspection.
    var rejected: String { final + ".checksum-mismatch" }

    init(destination: DownloadOptions.Destination, suggestedName: String) {
        switch destination {
        case .file(let path): final = path
        case .directory(let directory):
            final = directory.hasSuffix("/") ? directory + suggestedName : directory + "/" + suggestedName
        }
    }

    /// Fails fast, before any network traffic, on destinations that cannot work.
    static func checkDestination(_ destination: DownloadOptions.Destination) throws(DownloadError) {
        switch destination {
        case .directory(let directory):
            try FileSystem.checkWritableDirectory(directory)
        case .file(let path):
            guard !path.isEmpty else { throw DownloadError(.invalidOption, "output path is empty") }
            try checkFinalPath(path)
            try FileSystem.checkWritableDirectory(FileSystem.directoryName(of: path))
        }
    }

    static func checkFinalPath(_ path: String) throws(DownloadError) {
        if path.hasSuffix("/") || FileSystem.kind(of: path) == .directory {
            throw DownloadError(.fileSystem(errno: EISDIR), "output path \(path) is a directory (use -d DIR to download into it)")
        }
    }
}
