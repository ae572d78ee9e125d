import RangeFetchBase
import RangeFetchNetwork
import FoundationEssentials

/// Reads a batch's list of files (`-i FILE`).
///
/// Two forms, line by line, and a file may mix them:
/// - aria2c's input file: a URL per line (http(s), or `s3://BUCKET/KEY` for one S3 object,
///   possibly followed by TAB-separated http(s) mirrors); indented lines after it set that entry's options
///   (`out=NAME`, `dir=DIR`, `checksum=sha-256=HEX`, `header=Name: value`, repeatable);
///   `out=` and `dir=` are relative (to the entry's directory, to the batch's directory) and
///   may not contain `..`, so a list never writes outside the batch's directory;
///   `#` starts a comment line; blank lines are ignored.
/// - JSON lines, for scripts: `{"url": …, "out": …, "dir": …, "sha256": …, "headers": […]}`
///   (also `sha512`, `sha1`, `md5`, `checksum`, `header`); other keys are ignored.
///
/// Any malformed line is a usage error naming the file and line: ``parse(_:source:)`` finds it before
/// a byte is fetched; a streamed list (`ManifestReader`) when the reader reaches it.
public enum Manifest {
    /// The options an indented line may set.
    public static let optionNames = ["out", "dir", "checksum", "header"]

    /// Parses a list: its entries in order, or a usage error naming `source` and the line.
    /// (A list too long to hold is read with `ManifestReader`, line by line, by the same parser.)
    public static func parse(_ text: String, source: String) throws(DownloadError) -> [BatchEntry] {
        var parser = ManifestParser(source: source)
        var entries: [BatchEntry] = []
        // "\r\n" is one Character in Swift: both end a line.
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            if let entry = try parser.consume(line) { entries.append(try entry.resolvingMetalink()) }
        }
        if let entry = parser.finish() { entries.append(try entry.resolvingMetalink()) }
        return entries
    }

    /// Fails when two entries would be saved at the same path (as far as can be told before the
    /// servers suggest names), naming both.
    public static func checkDistinctPaths(_ entries: [BatchEntry], defaultDirectory: String) throws(DownloadError) {
        var seen: [String: BatchEntry] = [:]
        for entry in entries {
            let path = entry.expectedPath(defaultDirectory: defaultDirectory)
            if let first = seen[path] { throw DistinctPaths.duplicate(entry, first, path) }
            seen[path] = entry
        }
    }

    static func describe(_ entry: BatchEntry) -> String {
        entry.origin.map { "\($0) (\(entry.url))" } ?? entry.url
    }

    // MARK: Lines

    /// An entry's URL: http(s), or an `s3://BUCKET/KEY` naming one object. A prefix
    /// (`s3://BUCKET/PREFIX/`) is refused: its objects are listed as a batch of their own.
    static func checkedURL(_ text: String, fail: (String) -> DownloadError) throws(DownloadError) -> String {
        // A local metalink, read when the entry is (``BatchEntry/resolvingMetalink()``).
        if SourceAddress.isMetalinkFile(text) { return text }
        let parsed = try address(text, fail: fail)
        guard !parsed.isPrefix else {
            throw DownloadError(.invalidOption,
                                fail("\(text) names a prefix, not an object: fetch a prefix as its own batch").message,
                                remedy: .fetchPrefixAsBatch)
        }
        return text
    }

    /// A mirror: the same file at another http(s) URL.
    static func checkedMirror(_ text: String, fail: (String) -> DownloadError) throws(DownloadError) -> String {
        if try address(text, fail: fail).isS3 { throw fail("\(text): a mirror must be an http:// or https:// URL (an s3:// URL may only come first on its line)") }
        return text
    }

    /// `text` parsed, its failure told as the list's (file and line).
    private static func address(_ text: String, fail: (String) -> DownloadError) throws(DownloadError) -> SourceAddress {
        do {
            return try SourceAddress(text)
        } catch {
            throw fail(error.message)
        }
    }

    static func applyOption(_ text: String, to entry: inout BatchEntry,
                                    fail: (String) -> DownloadError) throws(DownloadError) {
        guard let equals = text.firstIndex(of: "=") else {
            throw fail("expected an option NAME=VALUE (\(optionNames.joined(separator: ", "))), got '\(text)'")
        }
        let name = String(text[..<equals]).lowercased()
        let value = String(text[text.index(after: equals)...])
        switch name {
        case "out": entry.output = try checkedName(value, fail: fail)
        case "dir": entry.directory = try checkedDirectory(value, key: "dir=", fail: fail)
        case "checksum": entry.checksums.append(try checkedDigest(value, fail: fail))
        case "header": entry.headers.append(try checkedHeader(value, fail: fail))
        default:
            throw fail("unknown option '\(name)' (this tool reads \(optionNames.joined(separator: ", ")))")
        }
    }

    /// `out=` is a path relative to the entry's directory: never absolute, never `..`.
    private static func checkedName(_ value: String, fail: (String) -> DownloadError) throws(DownloadError) -> String {
        let components = value.split(separator: "/")
        guard !value.isEmpty, !value.hasPrefix("/"), !value.hasSuffix("/"), !components.contains("..") else {
            throw fail("out= must be a file name relative to the directory, without '..' (got '\(value)'); use dir= for the directory")
        }
        return value
    }

    /// `dir=` is a directory inside the batch's: never absolute, never `..`, so a list cannot
    /// write outside the directory the batch was given.
    private static func checkedDirectory(_ value: String, key: String,
                                         fail: (String) -> DownloadError) throws(DownloadError) -> String {
        guard !value.isEmpty else { throw fail("\(key) needs a directory") }
        guard !value.hasPrefix("/"), !value.split(separator: "/").contains("..") else {
            throw fail("\(key) must be a directory inside the batch's directory, without '..' and not absolute (got '\(value)')")
        }
        return value
    }

    private static func checkedDigest(_ value: String, fail: (String) -> DownloadError) throws(DownloadError) -> DigestValue {
        do {
            return try ChecksumSpec.parse(value)
        } catch {
            throw fail(error.message)
        }
    }

    private static func checkedHeader(_ value: String, fail: (String) -> DownloadError) throws(DownloadError) -> String {
        if let problem = RequestOptions.headerProblem(value) { throw fail("header= \(problem)") }
        return value
    }

    // MARK: JSON lines

    private struct JSONEntry: Decodable {
        var url: String
        var out: String?
        var dir: String?
        var sha256: String?
        var sha512: String?
        var sha1: String?
        var md5: String?
        var checksum: String?
        var header: String?
        var headers: [String]?
    }

    static func jsonEntry(_ text: String, origin: String, fail: (String) -> DownloadError) throws(DownloadError) -> BatchEntry {
        let decoded: JSONEntry
        do {
            decoded = try JSONDecoder().decode(JSONEntry.self, from: Data(text.utf8))
        } catch {
            throw fail("not a JSON object with a \"url\" string and string options (out, dir, sha256, sha512, sha1, md5, checksum, header, headers)")
        }
        var entry = BatchEntry(url: try checkedURL(decoded.url, fail: fail), origin: origin)
        if let out = decoded.out { entry.output = try checkedName(out, fail: fail) }
        if let dir = decoded.dir { entry.directory = try checkedDirectory(dir, key: "\"dir\"", fail: fail) }
        let named: [(DigestAlgorithm, String?)] = [(.sha256, decoded.sha256), (.sha512, decoded.sha512), (.sha1, decoded.sha1), (.md5, decoded.md5)]
        for (algorithm, hex) in named {
            guard let hex else { continue }
            entry.checksums.append(try checkedDigest("\(algorithm.rawValue)=\(hex)", fail: fail))
        }
        if let checksum = decoded.checksum { entry.checksums.append(try checkedDigest(checksum, fail: fail)) }
        for header in (decoded.header.map { [$0] } ?? []) + (decoded.headers ?? []) {
            entry.headers.append(try checkedHeader(header, fail: fail))
        }
        return entry
    }
}
