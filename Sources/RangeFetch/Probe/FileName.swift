/// Chooses a safe local file name from what a server says.
public enum FileName {
    /// The name used when nothing usable is offered.
    public static let fallback = "download"

    /// A name safe to create in the output directory: the last path component only, no control
    /// characters, not `.` or `..`, at most 255 bytes. Empty or unusable input gives ``fallback``.
    public static func sanitize(_ raw: String) -> String {
        let lastComponent = raw.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var name = String(lastComponent.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }
            .map(Character.init))
        name = String(name.trimmingASCIIWhitespace())
        while name.utf8.count > 255 { name.removeFirst() }
        if name.isEmpty || name == "." || name == ".." { return fallback }
        return name
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
