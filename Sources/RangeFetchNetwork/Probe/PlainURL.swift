import RangeFetchBase

/// The commonest URL of a list of millions, read without libcurl: `http://` or `https://`, a
/// lower-case host name or a dotted-quad IPv4 address, an optional port, and a path of plain
/// characters, with no user, query, fragment or percent-escape.
///
/// Anything else is `nil` and goes to libcurl's parser (`URLParts.init(_:)`); what is accepted
/// here splits exactly as libcurl splits it (``PlainURLTests`` compares the two), so it only saves
/// the time: each line of a list is checked (and named) at a few hundred nanoseconds.
///
/// | text | accepted | why not |
/// |---|---|---|
/// | `http://h.example/d/f.bin`, `https://10.0.0.1:8443/f` | yes | |
/// | `HTTP://h/f`, `http://H/f` | no | upper case: libcurl's own reading |
/// | `http://127.1/f`, `http://0x7f.0.0.1/f`, `http://1234/f` | no | libcurl rewrites such IPv4 forms |
/// | `http://h/f?x=1`, `http://h/a%20b`, `http://u@h/f`, `http://[::1]/f` | no | libcurl's own reading |
/// | `http://h:0/f`, `http://h:080/f`, `http://h:65536/f` | no | not a plain port |
package struct PlainURL: Sendable, Equatable {
    /// The URL split, as libcurl would split it.
    package let parts: URLParts
    /// What follows the path's last `/` (maybe empty), as written.
    package let lastSegment: String

    /// Reads `text`, or `nil` when it is not plain.
    package init?(_ text: String) {
        var text = text
        guard let read = text.withUTF8({ bytes -> (URLParts, String)? in
            guard let split = Self.split(bytes) else { return nil }
            func string(_ range: Range<Int>) -> String { String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self) }
            let parts = URLParts(scheme: split.secure ? "https" : "http", host: string(split.host),
                                 path: split.path.isEmpty ? "/" : string(split.path),
                                 query: nil, user: nil, password: nil, port: split.port)
            return (parts, string(split.lastSegment))
        }) else { return nil }
        (parts, lastSegment) = read
    }

    /// Byte ranges of a plain URL's host, path and last segment, its port, and whether it is
    /// https; `nil` when the URL is not plain.
    private static func split(_ bytes: UnsafeBufferPointer<UInt8>)
        -> (secure: Bool, host: Range<Int>, port: Int, path: Range<Int>, lastSegment: Range<Int>)? {
        let secure: Bool
        if bytes.starts(with: "http://".utf8) { secure = false } else if bytes.starts(with: "https://".utf8) { secure = true } else { return nil }
        var index = secure ? 8 : 7
        let hostStart = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "/"), bytes[index] != UInt8(ascii: ":") { index += 1 }
        let host = hostStart..<index
        guard isPlainHost(UnsafeBufferPointer(rebasing: bytes[host])) else { return nil }
        var port = secure ? 443 : 80
        if index < bytes.count, bytes[index] == UInt8(ascii: ":") {
            index += 1
            let portStart = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "/") { index += 1 }
            guard let given = plainPort(UnsafeBufferPointer(rebasing: bytes[portStart..<index])) else { return nil }
            port = given
        }
        let pathStart = index
        var segmentStart = index
        while index < bytes.count {
            let byte = bytes[index]
            guard isPlainPathByte(byte) else { return nil }
            index += 1
            if byte == UInt8(ascii: "/") { segmentStart = index }
        }
        return (secure, host, port, pathStart..<index, segmentStart..<index)
    }

    /// Lower-case labels of letters, digits and `-` with one starting with a letter (no IPv4
    /// form), or a dotted quad written as libcurl writes it back (`127.0.0.1`, not `127.000.0.1`).
    /// One pass, no allocation: every line of a list comes here.
    private static func isPlainHost(_ host: UnsafeBufferPointer<UInt8>) -> Bool {
        var named = false, labels = 0
        var label = 0 // bytes of the current label
        var value = 0, numeric = true, leadingZero = false, quad = true
        for index in 0...host.count {
            guard index < host.count, host[index] != UInt8(ascii: ".") else {
                // The end of a label.
                guard label > 0 else { return false }
                labels += 1
                if !(numeric && label <= 3 && !(leadingZero && label > 1) && value <= 255) { quad = false }
                label = 0; value = 0; numeric = true; leadingZero = false
                continue
            }
            let byte = host[index]
            if isDigit(byte) {
                if label == 0 && byte == UInt8(ascii: "0") { leadingZero = true }
                if value <= 255 { value = value * 10 + Int(byte - UInt8(ascii: "0")) }
            } else if isLowerLetter(byte) || byte == UInt8(ascii: "-") {
                if label == 0 && isLowerLetter(byte) { named = true }
                numeric = false
            } else {
                return false
            }
            label += 1
        }
        return named || (quad && labels == 4)
    }

    /// 1 to 65535 without a leading zero, else `nil`.
    private static func plainPort(_ digits: UnsafeBufferPointer<UInt8>) -> Int? {
        guard (1...5).contains(digits.count), digits.allSatisfy(isDigit), digits.first != UInt8(ascii: "0") else { return nil }
        let value = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        return value <= 65535 ? value : nil
    }

    /// Letters, digits and `-._~/`: what libcurl keeps as it is with nothing to decode.
    private static func isPlainPathByte(_ byte: UInt8) -> Bool {
        isLowerLetter(byte) || isDigit(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "~") || byte == UInt8(ascii: "/")
    }

    private static func isLowerLetter(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) }
    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
}
