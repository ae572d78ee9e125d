/// The status line and headers of one HTTP response, collected from libcurl's header callback.
///
/// With redirects followed, libcurl reports every response's headers in turn; a new status line
/// starts a new head, so what remains describes the final response.
struct ResponseHead: Sendable {
    var status: Int = 0
    /// Header fields by lower-cased name; repeated fields are joined with ", ".
    var fields: [String: String] = [:]
    /// Whether the blank line ending the head has been seen.
    var isComplete = false

    /// Feeds one raw header line (as libcurl delivers it, with CRLF).
    mutating func consume(line raw: String) {
        let line = raw.trimmingASCIIWhitespace()
        if line.hasPrefix("HTTP/") {
            self = ResponseHead()
            let parts = line.split(separator: " ", maxSplits: 2)
            if parts.count >= 2, let code = Int(parts[1]) { status = code }
            return
        }
        if line.isEmpty {
            isComplete = true
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        let value = String(String(line[line.index(after: colon)...]).trimmingASCIIWhitespace())
        if let existing = fields[name] {
            fields[name] = existing + ", " + value
        } else {
            fields[name] = value
        }
    }

    subscript(_ name: String) -> String? { fields[name] }

    var contentLength: Int64? { self["content-length"].flatMap { Int64($0) } }

    var contentRange: ContentRange? { self["content-range"].flatMap(ContentRange.init(header:)) }

    /// Whether the body is encoded (gzip, br, ...): ranges of an encoded representation are not
    /// ranges of the file.
    var hasContentEncoding: Bool {
        guard let encoding = self["content-encoding"]?.lowercased() else { return false }
        return !encoding.isEmpty && encoding != "identity"
    }
}

/// A parsed `Content-Range` header: `bytes first-last/complete` or `bytes */complete`.
public struct ContentRange: Equatable, Sendable {
    /// The bytes carried, as a half-open range; `nil` for the unsatisfied form `*/complete`.
    public var range: ByteRange?
    /// The full representation's length, or `nil` when the server sent `*`.
    public var completeLength: Int64?

    public init(range: ByteRange?, completeLength: Int64?) {
        self.range = range
        self.completeLength = completeLength
    }

    /// Parses the header's value; `nil` when malformed (last < first, non-digits, other units).
    public init?(header: String) {
        let value = header.trimmingASCIIWhitespace()
        guard value.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst(6).trimmingCharacters()
        let halves = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        if halves[1] == "*" {
            completeLength = nil
        } else {
            guard let total = Self.digits(halves[1]) else { return nil }
            completeLength = total
        }
        if halves[0] == "*" {
            guard completeLength != nil else { return nil }
            range = nil
            return
        }
        let bounds = halves[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Self.digits(bounds[0]), let last = Self.digits(bounds[1]),
              first <= last, last < Int64.max else { return nil }
        if let completeLength, last >= completeLength { return nil }
        range = ByteRange(first, last + 1)
    }

    private static func digits(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(text)
    }
}

extension Substring {
    func trimmingCharacters() -> Substring {
        String(self).trimmingASCIIWhitespace()
    }
}
