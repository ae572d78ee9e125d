import RangeFetchBase
import RangeFetchNetwork

/// One file of a batch: a URL and where and how to save it.
public struct BatchEntry: Sendable, Equatable {
    /// The file's URL (`http`, `https` or `s3://`).
    public var url: String
    /// The file name (`out=`), relative to ``directory``; `nil`: the name
    /// ``DownloadOptions/nameSource`` gives.
    public var output: String?
    /// The directory to save into (`dir=`), relative to the batch's directory
    /// (``BatchOptions/directory``); `nil`: the batch's directory itself.
    public var directory: String?
    /// Digests the file must match (`checksum=`), on top of any the server advertises.
    public var checksums: [DigestValue] = []
    /// Extra request headers for this file only (`header=`), `Name: value`.
    public var headers: [String] = []
    /// Where the entry was written, for messages: `list.txt:12`, or `nil` for the command line.
    public var origin: String?
    /// Other URLs of the same file (aria2c's TAB-separated URLs on one line): see
    /// ``DownloadOptions/mirrors``.
    public var mirrors: [String] = []
    /// The size the file must have (a metalink's): see ``DownloadOptions/expectedSize``.
    public var expectedSize: Int64?
    /// The file's piece digests (a metalink's): see ``DownloadOptions/pieceDigests``.
    public var pieceDigests: Metalink.Pieces?

    /// An entry for `url`, with the options an `-i` list line can give it.
    public init(url: String, output: String? = nil, directory: String? = nil, checksums: [DigestValue] = [],
                headers: [String] = [], origin: String? = nil) {
        self.url = url
        self.output = output
        self.directory = directory
        self.checksums = checksums
        self.headers = headers
        self.origin = origin
    }

    /// Where the file lands unless the server's name is trusted (``NameSource/server``):
    /// `output`, else the URL's last path segment, in ``directory(defaultDirectory:)``.
    public func expectedPath(defaultDirectory: String) -> String {
        Self.join(directory(defaultDirectory: defaultDirectory), output ?? NameSource.nameFromURL(url))
    }

    /// How this entry's file is named: `.file(dir/out)` or `.directory(dir)`.
    func destination(defaultDirectory: String) -> DownloadOptions.Destination {
        let folder = directory(defaultDirectory: defaultDirectory)
        return output.map { .file(Self.join(folder, $0)) } ?? .directory(folder)
    }

    /// The directory the file goes into: ``directory`` inside `defaultDirectory` (the batch's).
    public func directory(defaultDirectory: String) -> String {
        directory.map { Self.join(defaultDirectory, $0) } ?? defaultDirectory
    }

    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}
