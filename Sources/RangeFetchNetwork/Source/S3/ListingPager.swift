import RangeFetchBase

/// Decides whether a ListObjectsV2 listing goes on to another page.
///
/// A server that answers every page with the same `NextContinuationToken` would be asked the
/// same page forever (measured: 448 requests in 20 s, silently). As botocore does ("the same
/// next token was received twice"), a token already followed ends the listing with an error.
///
/// | tokens so far | next token | result        |
/// |---------------|------------|---------------|
/// | none          | nil        | done (`nil`)  |
/// | none          | "a"        | "a"           |
/// | "a"           | "b"        | "b"           |
/// | "a", "b"      | "a"        | error         |
/// | "a"           | "a"        | error         |
package struct ListingPager {
    /// How messages name the listing (`s3://BUCKET/PREFIX`).
    package let what: String
    private var followed: Set<String> = []

    package init(what: String) { self.what = what }

    /// The token to request the next page with, or `nil` when the listing is complete.
    /// - Throws: `.protocolViolation` when `token` was already followed.
    package mutating func next(_ token: String?) throws(DownloadError) -> String? {
        guard let token else { return nil }
        guard followed.insert(token).inserted else {
            throw DownloadError(.protocolViolation, "listing \(what): the server sent the same continuation token twice, after \(followed.count) pages; stopping rather than asking for the same page forever", url: what)
        }
        return token
    }
}

/// S3's `encoding-type=url` in listings: keys come percent-encoded, with `+` for a space (as
/// botocore's `unquote_plus` reads them), so a key with a control character still makes
/// well-formed XML.
package enum ListingKeyDecoding {
    /// `text` decoded; `nil` when a `%` is not followed by two hex digits or the bytes are not UTF-8.
    package static func decode(_ text: String) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
