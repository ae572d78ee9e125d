import RangeFetchBase

/// The status line and headers of one HTTP response, collected from libcurl's header callback.
///
/// With redirects followed, libcurl reports every response's headers in turn; a new status line
/// starts a new head, so what remains describes the final response. A head larger than
/// ``ResponseLimits`` allows is not kept: ``exceededLimits`` is set and later lines are dropped.
package struct ResponseHead: Sendable {
    /// The status code, `100...999`; 0 until a well-formed status line arrives.
    package var status: Int = 0
    /// Header fields by lower-cased name; repeated fields are joined with ", ".
    package var fields: [String: String] = [:]
    /// Whether the blank line ending the head has been seen.
    package var isComplete = false
    /// Bytes of this head consumed so far (status line included, CRLFs counted).
    package private(set) var headBytes = 0
    /// Lines of this head consumed so far (status line included).
    package private(set) var headLines = 0
    /// Set when a head passed ``ResponseLimits/maximumHeadBytes`` or
    /// ``ResponseLimits/maximumHeadLines``; stays set, and the response must be refused.
    package private(set) var exceededLimits = false

    /// An empty head, before the status line.
    package init() {}

    /// Feeds one raw header line (as libcurl delivers it, with CRLF).
    /// - Returns: `false` once the head exceeds ``ResponseLimits``: stop reading (the header
    ///   callback then returns 0, which aborts the transfer).
    @discardableResult
    package mutating func consume(line raw: String) -> Bool {
        var raw = raw
        return raw.withUTF8 { consume(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Feeds one raw header line straight from libcurl's buffer, read as bytes: a field's name
    /// lower-cased, its value decoded as UTF-8 (invalid bytes replaced), both only when the head
    /// is within the limits.
    @discardableResult
    package mutating func consume(bytes raw: UnsafeRawBufferPointer) -> Bool {
        // Sticky: a transfer that once sent too much is refused even if another head follows.
        if exceededLimits { return false }
        let startsNewHead = raw.starts(with: Self.statusLinePrefix)
        if startsNewHead { self = ResponseHead() }
        headBytes += raw.count
        headLines += 1
        guard headBytes <= ResponseLimits.maximumHeadBytes, headLines <= ResponseLimits.maximumHeadLines else {
            exceededLimits = true
            fields = [:]
            return false
        }
        let line = Self.trimmed(raw)
        if startsNewHead {
            // "HTTP/1.1 206 Partial Content": the code is the second word, three digits.
            let words = line.split(separator: Self.space, maxSplits: 2)
            if words.count >= 2, words[1].count == 3, words[1].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
                let code = words[1].reduce(0) { $0 * 10 + Int($1 - 0x30) }
                if code >= 100 { status = code }
            }
            return true
        }
        if line.isEmpty {
            isComplete = true
            return true
        }
        guard let colon = line.firstIndex(of: Self.colon) else { return true }
        let rawName = UnsafeRawBufferPointer(rebasing: line[..<colon])
        let name = rawName.allSatisfy({ $0 < 0x80 })
            ? String(unsafeUninitializedCapacity: rawName.count) { buffer in
                // Lower-cased as copied: one allocation at most (none for a name of 15 bytes or fewer).
                for (index, byte) in rawName.enumerated() { buffer[index] = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }
                return rawName.count
            }
            : String(decoding: rawName, as: UTF8.self).lowercased()
        let value = String(decoding: Self.trimmed(UnsafeRawBufferPointer(rebasing: line[(colon + 1)...])), as: UTF8.self)
        // Room for a usual head's fields at once, not grown field by field (a list of small
        // files reads a head per file).
        if fields.isEmpty { fields.reserveCapacity(12) }
        if let existing = fields[name] {
            fields[name] = existing + ", " + value
        } else {
            fields[name] = value
        }
        return true
    }

    private static let statusLinePrefix = Array("HTTP/".utf8)
    private static let space = UInt8(ascii: " ")
    private static let colon = UInt8(ascii: ":")

    /// `bytes` without the spaces, tabs, CRs and LFs at either end.
    private static func trimmed(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        return UnsafeRawBufferPointer(rebasing: bytes[start..<end])
    }

    package subscript(_ name: String) -> String? { fields[name] }

    /// The body length the server announced, in bytes; `nil` when absent or unusable (see
    /// ``invalidContentLength``).
    package var contentLength: Int64? { self["content-length"].flatMap(Self.parseContentLength) }

    /// The raw `Content-Length` value when one was sent but is not a usable length: negative,
    /// not digits, past ``ResponseLimits/maximumContentLength``, or a list of differing values.
    package var invalidContentLength: String? {
        guard let value = self["content-length"], Self.parseContentLength(value) == nil else { return nil }
        return value
    }

    /// Parses a `Content-Length` field value (RFC 9110 8.6: `1*DIGIT`; a list of identical values,
    /// as left by joining repeated fields, counts as one).
    package static func parseContentLength(_ value: String) -> Int64? {
        // What nearly every server sends: digits alone.
        if value.utf8.count <= 18, !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            return Int64(value).flatMap { $0 <= ResponseLimits.maximumContentLength ? $0 : nil }
        }
        var length: Int64?
        for item in value.split(separator: ",", omittingEmptySubsequences: false) {
            let digits = item.trimmingCharacters()
            guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let parsed = Int64(digits), parsed <= ResponseLimits.maximumContentLength,
                  length == nil || length == parsed else { return nil }
            length = parsed
        }
        return length
    }

    package var contentRange: ContentRange? { self["content-range"].flatMap(ContentRange.init(header:)) }

    /// Whether the body is encoded (gzip, br, ...): ranges of an encoded representation are not
    /// ranges of the file.
    package var hasContentEncoding: Bool { contentEncoding != nil }

    /// The `Content-Encoding` when it names a coding other than identity (lower-cased).
    package var contentEncoding: String? {
        guard let encoding = self["content-encoding"]?.trimmingASCIIWhitespace().lowercased(),
              !encoding.isEmpty, encoding != "identity" else { return nil }
        return encoding
    }

    /// Why this head must not be used, whatever its status, or `nil`: too large, or a
    /// `Content-Length` that is no length.
    package func malformation(url: String) -> DownloadError? {
        if exceededLimits {
            return DownloadError(.protocolViolation, "\(url): server sent a response head over \(ResponseLimits.maximumHeadBytes >> 10) KiB or \(ResponseLimits.maximumHeadLines) lines (libcurl takes no larger head); refusing the response", url: url)
        }
        if let invalid = invalidContentLength {
            return DownloadError(.protocolViolation, "\(url): server sent an unusable Content-Length '\(ResponseLimits.quoted(invalid))' (not a byte count up to 4 EiB)", url: url)
        }
        return nil
    }

    // MARK: Checks every answer to one of our requests must pass (downloads, probe, bench)

    /// The error for a status outside 2xx, naming the URL, the status and what it usually means,
    /// the range asked for, and carrying the server's `Retry-After`; `nil` for 2xx.
    package func statusError(url: String, range: ByteRange? = nil) -> DownloadError? {
        guard !(200..<300).contains(status) else { return nil }
        if (300..<400).contains(status) {
            // Only a signed (S3) request comes back with a redirect unfollowed: its signature and
            // token must not go along to another host.
            let target = self["location"].map { " to \(Redaction.url($0))" } ?? ""
            return DownloadError(.httpStatus(status), "\(url): server answered HTTP \(status), a redirect\(target); signed requests are not followed elsewhere (an S3 bucket in another region answers this way: set AWS_REGION or the endpoint to the bucket's)", url: url)
        }
        var error = DownloadError(.httpStatus(status), "\(url): server answered HTTP \(status)\(Prober.reason(status))"
                                  + (range.map { " for range \($0.httpRangeSpec)" } ?? "")
                                  + (status >= 400 ? PresignedURL.expiredNote(url).map { "; \($0)" } ?? "" : ""), url: url)
        error.retryAfterSeconds = RetryPolicy.retryAfterSeconds(self["retry-after"])
        if status == 401 { error.remedy = .giveCredentials }
        return error
    }

    /// A 2xx answer to a request for `asked` that is not a `206`: the server sends the whole file.
    package func ignoredRangeError(url: String) -> DownloadError? {
        status == 206 ? nil : DownloadError(.rangesNotHonoured, "\(url): server ignored the Range header (HTTP \(status))", url: url)
    }

    /// A `206` whose `Content-Range` is not exactly `asked` of a `size`-byte file.
    package func contentRangeError(asked: ByteRange, size: Int64?, url: String) -> DownloadError? {
        if let contentRange, contentRange.range == asked, contentRange.completeLength == size { return nil }
        return DownloadError(.protocolViolation, "\(url): asked for bytes \(asked.httpRangeSpec), server sent Content-Range '\(self["content-range"] ?? "none")'", url: url)
    }
}

/// A parsed `Content-Range` header: `bytes first-last/complete` or `bytes */complete`.
package struct ContentRange: Equatable, Sendable {
    /// The bytes carried, as a half-open range; `nil` for the unsatisfied form `*/complete`.
    package var range: ByteRange?
    /// The full representation's length, or `nil` when the server sent `*`.
    package var completeLength: Int64?

    package init(range: ByteRange?, completeLength: Int64?) {
        self.range = range
        self.completeLength = completeLength
    }

    /// Parses the header's value; `nil` when malformed (last < first, non-digits, other units,
    /// numbers past ``ResponseLimits/maximumContentLength``).
    package init?(header: String) {
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
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let value = Int64(text), value <= ResponseLimits.maximumContentLength else { return nil }
        return value
    }
}
