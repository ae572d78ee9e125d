import RangeFetchBase
import RangeFetchNetwork

/// Turns a list's lines into entries one line at a time, so a list of any length is parsed with
/// the memory of one entry (``Manifest`` describes the format; ``Manifest/parse(_:source:)`` and
/// `ManifestReader` both use this parser).
///
/// An entry is complete only when the next entry's line (or the end) comes, since indented option
/// lines may follow its URL: ``consume(_:)`` hands back the entry the line completed, ``finish()``
/// the last one.
package struct ManifestParser: Sendable {
    /// The list's name in messages (`list.txt`, `stdin`).
    public let source: String
    /// Lines consumed so far: the number of the line just read.
    public private(set) var lineNumber = 0
    /// The entry whose option lines may still follow.
    private var pending: BatchEntry?

    /// A parser for the list named `source`.
    public init(source: String) {
        self.source = source
    }

    /// Reads the next line (without its line break): the entry it completed, if any; a usage
    /// error naming the file and line when the line is malformed.
    public mutating func consume(_ line: Substring) throws(DownloadError) -> BatchEntry? {
        lineNumber += 1
        let trimmed = Self.trimmed(line)
        if trimmed.isEmpty || trimmed.hasPrefix("#") { return nil }
        let origin = "\(source):\(lineNumber)"
        func fail(_ message: String) -> DownloadError {
            DownloadError(.invalidOption, "\(origin): \(message)")
        }
        if line.first == " " || line.first == "\t" {
            guard var entry = pending else { throw fail("an option line must follow a URL line (got '\(trimmed)')") }
            try Manifest.applyOption(String(trimmed), to: &entry, fail: fail)
            pending = entry
            return nil
        }
        let entry: BatchEntry
        if trimmed.hasPrefix("{") {
            entry = try Manifest.jsonEntry(String(trimmed), origin: origin, fail: fail)
        } else {
            // aria2c's mirrors: several URLs of one file, TAB-separated.
            var urls: [String] = []
            // Most lines hold one URL: split only a line with a TAB.
            let fields = Self.hasTab(trimmed)
                ? trimmed.split(separator: "\t").map({ $0.trimmingCharacters() }) : [trimmed]
            for url in fields where !url.isEmpty {
                // The first URL may name an S3 object; its mirrors are http(s).
                urls.append(urls.isEmpty ? try Manifest.checkedURL(String(url), fail: fail)
                                         : try Manifest.checkedMirror(String(url), fail: fail))
            }
            var line = BatchEntry(url: urls[0], origin: origin)
            line.mirrors = Array(urls.dropFirst())
            entry = line
        }
        defer { pending = entry }
        return pending
    }

    /// `line` without the white space around it; the line itself (no copy) when it neither
    /// starts nor ends with white space, as most lines of a list of millions.
    static func trimmed(_ line: Substring) -> Substring {
        let space: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") }
        if let first = line.utf8.first, let last = line.utf8.last, !space(first), !space(last) { return line }
        return line.trimmingCharacters()
    }

    /// Whether `text` holds a TAB (mirrors on one line), searched in its bytes.
    private static func hasTab(_ text: Substring) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { $0.contains(UInt8(ascii: "\t")) } ?? text.utf8.contains(UInt8(ascii: "\t"))
    }

    /// The last entry, once every line is consumed.
    public mutating func finish() -> BatchEntry? {
        defer { pending = nil }
        return pending
    }
}
