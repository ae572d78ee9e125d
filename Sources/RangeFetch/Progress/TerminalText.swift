import RangeFetchBase
import RangeFetchNetwork

/// Text a server chose (an ETag, a `Content-Range`, an S3 key, a file name from
/// `Content-Disposition`, a redirect's path), made safe to print on a terminal.
///
/// Such text reaches messages, warnings and the batch table; printed raw, an ESC byte lets a
/// server move the cursor, rewrite earlier lines or retitle the window, and a CR or LF lets it
/// forge a line of our output. Every character that a terminal acts on is written as a visible
/// escape instead; everything else, valid UTF-8 included, is kept.
///
/// | input                               | output     |
/// |-------------------------------------|------------|
/// | ESC (U+001B)                        | `\e`       |
/// | CR, LF, TAB                         | `\r` `\n` `\t` |
/// | other C0 controls (U+0000–U+001F)   | `\xHH`     |
/// | DEL (U+007F)                        | `\x7F`     |
/// | C1 controls (U+0080–U+009F)         | `\u{HHHH}` |
/// | bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069) | `\u{HHHH}` |
/// | anything else (`é`, `日本`, `😀`)     | unchanged  |
///
/// (Bytes that are not UTF-8 became U+FFFD when the text was decoded: harmless.)
package enum TerminalText {
    /// `text` with every terminal control written as a visible escape (see the table).
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar.value {
            case 0x1B: result += "\\e"
            case 0x0D: result += "\\r"
            case 0x0A: result += "\\n"
            case 0x09: result += "\\t"
            case 0...0x1F, 0x7F: result += "\\x" + hex(scalar.value, digits: 2)
            default: result += "\\u{" + hex(scalar.value, digits: 4) + "}"
            }
        }
        return result
    }

    /// Whether a terminal would act on `scalar` rather than show it.
    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
