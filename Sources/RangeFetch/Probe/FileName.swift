/// Makes safe local file names out of what a URL or a server says.
public enum FileName {
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
    static let maximumExtensionBytes = 32

    /// A name safe to create in the output directory (``usable(_:from:)``), else ``fallback``.
    public static func sanitize(_ raw: String, from origin: Origin) -> String {
        usable(raw, from: origin) ?? fallback
    }

    /// A name a server offers, made safe (``sanitize(_:from:)`` with ``Origin/server``).
    public static func sanitize(_ raw: String) -> String {
        sanitize(raw, from: .server)
    }

    /// A name safe to create in the output directory: the last path component only, no control
    /// characters, no surrounding white space, not `.` or `..`, no leading dot from a server,
    /// cut to ``maximumBytes`` (`fitted(_:maximumBytes:)`). `nil` when nothing is left.
    public static func usable(_ raw: String, from origin: Origin) -> String? {
        let lastComponent = raw.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var name = String(String.UnicodeScalarView(lastComponent.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }))
        name = String(name.trimmingASCIIWhitespace())
        if origin == .server {
            name = String(String(name.drop(while: { $0 == "." })).trimmingASCIIWhitespace())
        }
        if name.isEmpty || name == "." || name == ".." { return nil }
        return fitted(name)
    }

    /// `name` cut to at most `maximumBytes` UTF-8 bytes: the end of its stem goes, its extension
    /// (the last `.` and what follows, up to ``maximumExtensionBytes``) stays, and the cut falls
    /// between Unicode scalars so the result is valid UTF-8. A name that fits is unchanged.
    static func fitted(_ name: String, maximumBytes: Int = maximumBytes) -> String {
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
    public static func fromURLPath(_ path: String) -> String? {
        let withoutQuery = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard let last = withoutQuery.split(separator: "/", omittingEmptySubsequences: false).last,
              !last.isEmpty else { return nil }
        return percentDecode(String(last)) ?? String(last)
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

    static func percentDecode(_ text: String) -> String? {
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
