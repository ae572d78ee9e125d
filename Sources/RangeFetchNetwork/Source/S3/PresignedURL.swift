#if canImport(Glibc)
import RangeFetchBase
import Glibc
#endif

/// What a presigned URL says about its own life: AWS's `X-Amz-Date` + `X-Amz-Expires`
/// (Signature Version 4, also Google's `X-Goog-Date` + `X-Goog-Expires`) or the older `Expires`
/// (an epoch time, Signature Version 2).
package enum PresignedURL {
    /// When `url` stopped being valid (seconds since 1970), if it says.
    package static func expiry(_ url: String) -> Int? {
        guard let query = URLParts(url)?.query else { return nil }
        var fields: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let halves = pair.split(separator: "=", maxSplits: 1)
            if halves.count == 2 { fields[halves[0].lowercased()] = SigV4Signer.decode(String(halves[1])) }
        }
        for vendor in ["amz", "goog"] {
            if let date = fields["x-\(vendor)-date"].flatMap(parseAmzDate), let life = fields["x-\(vendor)-expires"].flatMap({ Int($0) }) {
                return date + life
            }
        }
        if fields["signature"] != nil, let epoch = fields["expires"].flatMap({ Int($0) }) { return epoch }
        return nil
    }

    /// A sentence for an error on `url` when it is a presigned URL past its expiry at `now`.
    package static func expiredNote(_ url: String, now: Int = Int(time(nil))) -> String? {
        guard let expiry = expiry(url), expiry < now else { return nil }
        return "the presigned URL expired \(now - expiry) s ago (its date plus its expiry): ask for a fresh one"
    }

    /// `YYYYMMDDTHHMMSSZ` as seconds since 1970.
    package static func parseAmzDate(_ text: String) -> Int? {
        let digits = Array(text.utf8)
        guard digits.count == 16, digits[8] == UInt8(ascii: "T"), digits[15] == UInt8(ascii: "Z") else { return nil }
        func number(_ from: Int, _ count: Int) -> Int32? { Int32(String(decoding: digits[from..<from + count], as: UTF8.self)) }
        guard let year = number(0, 4), let month = number(4, 2), let day = number(6, 2), let hour = number(9, 2),
              let minute = number(11, 2), let second = number(13, 2) else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        return Int(timegm(&parts))
    }
}
