#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
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

    /// The paths for `destination`. A symbolic link at a path the user gave as the file to
    /// write (`followsLink`) is followed once, here: the file it points to (created if missing)
    /// gets the bytes, and the link stays a link. A name chosen by a server or a list is never
    /// followed: a link there is an error, before anything is written.
    /// - Parameter found: what is at the path (`lstat`), when the caller looked already.
    init(destination: DownloadOptions.Destination, suggestedName: String, followsLink: Bool,
         found: FileSystem.Kind? = nil) throws(DownloadError) {
        let path = Self.path(destination, suggestedName: suggestedName)
        if followsLink {
            final = try FileSystem.followingLinks(path)
        } else {
            try Self.refuseLink(at: path, found: found)
            final = path
        }
    }

    /// The paths beside `final`, a name the caller chose and found nothing at (`lstat`).
    init(chosen final: String) {
        self.final = final
    }

    /// Whether a link at `destination`'s path is followed: only at a file path given as such
    /// (``DownloadOptions/followsLinkAtOutputPath``), never at a server's name in a directory.
    static func followsLink(_ destination: DownloadOptions.Destination, options: DownloadOptions) -> Bool {
        if case .file = destination { return options.followsLinkAtOutputPath }
        return false
    }

    /// Throws when `path` is a symbolic link (not followed to see where it points); `found`: what
    /// is there (`lstat`), when the caller looked already.
    static func refuseLink(at path: String, found: FileSystem.Kind? = nil) throws(DownloadError) {
        guard (found ?? FileSystem.kind(of: path, followingLinks: false)) == .symbolicLink else { return }
        throw DownloadError(.fileSystem(errno: ELOOP), "\(path) is a symbolic link; a link is followed only at a path given as the output file, never at a name a server or a list chose, so nothing was written", remedy: .removeStrayFile)
    }

    /// The path a file destination names (`-` for standard output).
    static func path(_ destination: DownloadOptions.Destination, suggestedName: String) -> String {
        switch destination {
        case .file(let path): path
        case .directory(let directory):
            directory.hasSuffix("/") ? directory + suggestedName : directory + "/" + suggestedName
        case .standardOutput: "-"
        }
    }

    /// Creates the missing directories a destination names (`-d new/sub`, the parents of
    /// `-o new/sub/file`; mode 0755 less the umask, like `mkdir -p`), then checks it.
    /// - Parameter followsLink: see ``init(destination:suggestedName:followsLink:)``.
    static func prepareDestination(_ destination: DownloadOptions.Destination, followsLink: Bool) throws(DownloadError) {
        switch destination {
        case .directory(let directory): try FileSystem.createDirectories(directory)
        case .file(let path) where !path.isEmpty && FileSystem.kind(of: path, followingLinks: followsLink) != .other:
            try FileSystem.createDirectories(FileSystem.directoryName(of: followsLink ? try FileSystem.followingLinks(path) : path))
        case .file, .standardOutput: break
        }
        try checkDestination(destination, followsLink: followsLink)
    }

    /// Fails fast, before any network traffic, on destinations that cannot work.
    /// - Parameter followsLink: see ``init(destination:suggestedName:followsLink:)``.
    static func checkDestination(_ destination: DownloadOptions.Destination, followsLink: Bool) throws(DownloadError) {
        switch destination {
        case .directory(let directory):
            try FileSystem.checkWritableDirectory(directory)
        case .file(let path):
            guard !path.isEmpty else { throw DownloadError(.invalidOption, "output path is empty") }
            if FileSystem.kind(of: path, followingLinks: followsLink) == .other {
                try StreamTarget.refusePlanted(path, followsLink: followsLink)
                guard access(path, W_OK) == 0 else {
                    throw DownloadError(.fileSystem(errno: EACCES), "\(path) is not writable")
                }
                return
            }
            if !followsLink { try refuseLink(at: path) }
            let final = followsLink ? try FileSystem.followingLinks(path) : path
            try checkFinalPath(final)
            try FileSystem.checkWritableDirectory(FileSystem.directoryName(of: final))
        case .standardOutput:
            break
        }
    }

    /// - Parameter found: what is at `path`, when the caller looked already (`lstat`: a link there
    ///   was refused, so the entry is what a link would lead to).
    static func checkFinalPath(_ path: String, found: FileSystem.Kind? = nil) throws(DownloadError) {
        if path.hasSuffix("/") || (found ?? FileSystem.kind(of: path)) == .directory {
            throw DownloadError(.fileSystem(errno: EISDIR), "output path \(path) is a directory", remedy: .downloadIntoDirectory)
        }
    }
}

/// A destination that is not a regular file: standard output, a pipe, a FIFO, a terminal or a
/// device (`/dev/null`). Bytes are written into it in order (``OrderedStream``); it is never
/// replaced by a file.
struct StreamTarget: Sendable {
    /// How messages name it.
    let name: String
    /// `nil`: this process's standard output.
    let path: String?

    /// Opened without following a link at ``path`` (a name a server or a list chose).
    private let refusesLink: Bool

    /// The stream a destination names, or `nil` when it is a (possibly new) regular file. A
    /// link at the path counts as what it points to only when `followsLink`
    /// (``OutputPaths/followsLink(_:options:)``); `found`: what is at the path (`lstat`), when the
    /// caller looked already and no link is followed.
    init?(destination: DownloadOptions.Destination, suggestedName: String, followsLink: Bool, found: FileSystem.Kind? = nil) {
        refusesLink = !followsLink
        if destination == .standardOutput {
            name = "standard output"
            path = nil
            return
        }
        let path = OutputPaths.path(destination, suggestedName: suggestedName)
        guard (found ?? FileSystem.kind(of: path, followingLinks: followsLink)) == .other else { return nil }
        name = path
        self.path = path
    }

    /// A descriptor open for writing, which the caller closes. Opening a FIFO waits for its
    /// reader. The file is judged (``refusePlanted(_:followsLink:opened:)``) before the open, so
    /// a FIFO of another user's is never opened, and again as opened, before a byte is written.
    func open() throws(DownloadError) -> Int32 {
        guard let path else {
            return try DownloadError.withSystemCalls { () throws(SystemCallError) in
                try SystemCall.check("dup", path: name) { dup(STDOUT_FILENO) }
            }
        }
        try Self.refusePlanted(path, followsLink: !refusesLink)
        let flags = O_WRONLY | O_CLOEXEC | O_NOCTTY | (refusesLink ? O_NOFOLLOW : 0)
        let descriptor = try DownloadError.withSystemCalls { () throws(SystemCallError) in
            try SystemCall.check("open", path: path) { Glibc.open(path, flags) }
        }
        var opened = stat()
        do throws(DownloadError) {
            guard fstat(descriptor, &opened) == 0 else {
                throw SystemCallError(function: "fstat", path: path, errno: errno).downloadError
            }
            try Self.refusePlanted(path, followsLink: !refusesLink, opened: opened)
        } catch {
            close(descriptor)
            throw error
        }
        return descriptor
    }

    /// Throws when the file at `path` (a link there followed when `followsLink`, as
    /// ``LinkFollowRule`` allows) is a FIFO, device or socket that ``SpecialFileRule`` keeps
    /// from receiving the download: another user's, in a sticky directory anyone can write to.
    /// - Parameter opened: the file as opened (`fstat`), judged instead of the entry at the path.
    static func refusePlanted(_ path: String, followsLink: Bool, opened: stat? = nil) throws(DownloadError) {
        let final = followsLink ? try FileSystem.followingLinks(path) : path
        var info = stat()
        if let opened {
            info = opened
        } else if lstat(final, &info) != 0 {
            return
        }
        guard info.st_mode & S_IFMT != S_IFREG else { return }
        let directory = FileSystem.directoryName(of: final)
        var holder = stat()
        guard stat(directory, &holder) == 0,
              !SpecialFileRule.mayWrite(owner: info.st_uid, directoryMode: holder.st_mode,
                                        directoryOwner: holder.st_uid, caller: geteuid()) else { return }
        throw DownloadError(.fileSystem(errno: EACCES), "\(final) is \(SpecialFileRule.kindName(info.st_mode)) owned by uid \(info.st_uid) in \(directory), which anyone can write to; another user may be reading it, so nothing was written to it", remedy: .removeStrayFile)
    }
}

extension OutputPaths {
    /// The paths of a download whose final path is known (a queue removing its partial file).
    init(final: String) {
        self.final = final
    }
}
