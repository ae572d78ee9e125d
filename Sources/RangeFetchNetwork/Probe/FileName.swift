import RangeFetchBase

/// Makes safe local file names out of what a URL or a server says.
package enum FileName {
    /// Who offered a name, which decides how far it is trusted.
    public enum Origin: Sendable, Equatable {
        /// The last segment of the URL the user gave: kept as written, a leading dot included
        /// (as `curl -O` does), since the user chose it.
        case userURL
        /// A server (`Content-Disposition`, a redirect's target): a leading dot is stripped, so
        /// a server cannot create a hidden file such as `.bashrc` or `.profile`.
        case server
    }

    /// The name used when nothing usable is offered.
    public static let fallback = "download"

    /// The longest name chosen, in UTF-8 bytes: 255 (the usual `NAME_MAX`) less the longest suffix
    /// a download adds (`.part.rfjournal.tmp`), so every file beside it can be created too.
    public static let maximumBytes = 255 - ".part.rfjournal.tmp".utf8.count

    /// The longest ending (`.iso`, `.safetensors`), in UTF-8 bytes, that cutting a long name keeps.
    package static let maximumExtensionBytes = 32

    /// A name safe to create in the output directory (``usable(_:from:)``), else ``fallback``.
    public static func sanitize(_ raw: String, from origin: Origin) -> String {
        usable(raw, from: origin) ?? fallback
    }

    /// A name a server offers, made safe (``sanitize(_:from:)`` with ``Origin/server``).
    public static func sanitize(_ raw: String) -> String {
        sanitize(raw, from: .server)
    }

    /// A name safe to create in the output directory: the last path component only, with no
    /// control characters (C0, DEL, C1), no bidirectional overrides or marks (which make
    /// `exe.txt` of `txt.exe` on screen), no surrounding white space, not `.` or `..`, no
    /// leading dot from a server, cut to ``maximumBytes`` (`fitted(_:maximumBytes:)`). `nil`
    /// when nothing is left.
    ///
    /// The rule is a fixed point: dropping, trimming and stripping repeat until nothing changes,
    /// so `". .bashrc"` cannot become `.bashrc` by losing its first dot and then its space.
    ///
    /// | offered | from a server | from the user's URL |
    /// |---|---|---|
    /// | `. .bashrc`, `.\u{A0}. .ssh` | `bashrc`, `ssh` | `. .bashrc`, `.\u{A0}. .ssh` |
    /// | `a/b/.profile` | `profile` | `.profile` |
    /// | `evil\u{202E}txt.exe` | `eviltxt.exe` | `eviltxt.exe` |
    /// | ` ..`, `. . .` | `nil` | `nil`, `. . .` |
    public static func usable(_ raw: String, from origin: Origin) -> String? {
        let lastComponent = raw.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var name = lastComponent
        while true {
            var next = String(String.UnicodeScalarView(name.unicodeScalars.filter(isKept)))
            next = trimmingWhiteSpace(next)
            if origin == .server { next = String(next.drop(while: { $0 == "." })) }
            if next == name { break }
            name = next
        }
        if name.isEmpty || name == "." || name == ".." { return nil }
        return fitted(name)
    }

    /// Whether a scalar may stay in a file name: not a C0 or C1 control, not DEL, and not a
    /// bidirectional override, embedding, isolate or mark.
    package static func isKept(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F: return false
        case 0x200E, 0x200F, 0x061C, 0x202A...0x202E, 0x2066...0x2069: return false
        default: return true
        }
    }

    /// `text` without white space (any Unicode white space, not only ASCII) at either end.
    private static func trimmingWhiteSpace(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[first...last])
    }

    /// `name` cut to at most `maximumBytes` UTF-8 bytes: the end of its stem goes, its extension
    /// (the last `.` and what follows, up to ``maximumExtensionBytes``) stays, and the cut falls
    /// between Unicode scalars so the result is valid UTF-8. A name that fits is unchanged.
    package static func fitted(_ name: String, maximumBytes: Int = maximumBytes) -> String {
        guard name.utf8.count > maximumBytes else { return name }
        var stem = Substring(name)
        var ending = Substring("")
        if let dot = name.lastIndex(of: "."), dot != name.startIndex,
           name[dot...].utf8.count <= maximumExtensionBytes {
            stem = name[..<dot]
            ending = name[dot...]
        }
        let budget = maximumBytes - ending.utf8.count
        var kept = String.UnicodeScalarView()
        var bytes = 0
        for scalar in stem.unicodeScalars {
            let width = UTF8.width(scalar)
            guard bytes + width <= budget else { break }
            kept.append(scalar)
            bytes += width
        }
        return String(kept) + ending
    }

    /// The file name in a `Content-Disposition` header value (`filename*=UTF-8''...` preferred
    /// over `filename="..."`), unsanitised; `nil` when there is none.
    public static func fromContentDisposition(_ header: String) -> String? {
        var plain: String?
        for parameter in splitParameters(header) {
            guard let equals = parameter.firstIndex(of: "=") else { continue }
            let key = parameter[..<equals].trimmingCharacters().lowercased()
            var value = String(parameter[parameter.index(after: equals)...].trimmingCharacters())
            if key == "filename*" {
                // RFC 8187: charset'language'percent-encoded
                let pieces = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
                if pieces.count == 3, let decoded = percentDecode(String(pieces[2])) { return decoded }
            } else if key == "filename" {
                if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                    value = String(value.dropFirst().dropLast()).replacingBackslashEscapes()
                }
                plain = value
            }
        }
        return plain
    }

    /// The last path segment of a URL path, percent-decoded; `nil` when the path ends in `/`.
    /// An encoded separator (`%2F`, `%5C`) decodes to `_`, never to a path: `innocent%2f.bashrc`
    /// is `innocent_.bashrc`, not `.bashrc`.
    public static func fromURLPath(_ path: String) -> String? {
        guard let last = lastRawSegment(ofPath: path) else { return nil }
        guard let decoded = percentDecode(last) else { return last }
        return String(decoded.map { $0 == "/" || $0 == "\\" ? "_" : $0 })
    }

    /// The last path segment of a URL path as written (still percent-encoded, no query); `nil`
    /// when the path ends in `/`.
    package static func lastRawSegment(ofPath path: String) -> String? {
        let withoutQuery = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard let last = withoutQuery.split(separator: "/", omittingEmptySubsequences: false).last,
              !last.isEmpty else { return nil }
        return String(last)
    }

    private static func splitParameters(_ header: String) -> [Substring] {
        var parts: [Substring] = []
        var start = header.startIndex
        var inQuotes = false
        var index = header.startIndex
        while index < header.endIndex {
            let character = header[index]
            if character == "\"" { inQuotes.toggle() }
            if character == ";" && !inQuotes {
                parts.append(header[start..<index])
                start = header.index(after: index)
            }
            index = header.index(after: index)
        }
        parts.append(header[start...])
        return parts
    }

    package static func percentDecode(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                      let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

private extension String {
    func replacingBackslashEscapes() -> String {
        var result = ""
        var escaping = false
        for character in self {
            if escaping || character != "\\" {
                result.append(character)
                escaping = false
            } else {
                escaping = true
            }
        }
        return result
    }
}
