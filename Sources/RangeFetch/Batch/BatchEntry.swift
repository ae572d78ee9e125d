/// One file of a batch: a URL and where and how to save it.
public struct BatchEntry: Sendable, Equatable {
    /// The file's URL (`http`, `https` or `s3://`).
    public var url: String
    /// The file name (`out=`), relative to ``directory``; `nil`: the server's name.
    public var output: String?
    /// The directory to save into (`dir=`); `nil`: the batch's directory.
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

    /// Where the file lands when the server suggests no other name: `directory/output`, or the
    /// URL's last path segment in `directory` (`defaultDirectory` when the entry names none).
    public func expectedPath(defaultDirectory: String) -> String {
        let name = output ?? FileName.sanitize(FileName.fromURLPath(URLParts(url)?.path ?? "") ?? FileName.fallback)
        return Self.join(directory ?? defaultDirectory, name)
    }

    /// How this entry's file is named: `.file(dir/out)` or `.directory(dir)`.
    func destination(defaultDirectory: String) -> DownloadOptions.Destination {
        let directory = self.directory ?? defaultDirectory
        return output.map { .file(Self.join(directory, $0)) } ?? .directory(directory)
    }

    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}
