import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Text a server chose never reaches the terminal raw: controls become visible escapes.
struct TerminalTextTests {
    @Test(arguments: [
        ("plain.bin", "plain.bin"),
        ("\u{1B}[31mred\u{1B}[0m", "\\e[31mred\\e[0m"),
        ("a\rb\nc\td", "a\\rb\\nc\\td"),
        ("\u{0}\u{7}\u{8}", "\\x00\\x07\\x08"),
        ("del\u{7F}", "del\\x7F"),
        ("c1\u{80}\u{85}\u{9B}\u{9F}", "c1\\u{0080}\\u{0085}\\u{009B}\\u{009F}"),
        ("bidi\u{202E}txt.exe\u{2066}", "bidi\\u{202E}txt.exe\\u{2066}"),
        // Valid UTF-8 stays, right next to the first character that is not controls.
        ("é日本😀\u{A0}\u{A9}", "é日本😀\u{A0}\u{A9}"),
        ("", ""),
    ])
    func escapesEveryTerminalControlAndKeepsTheRest(input: String, output: String) {
        #expect(TerminalText.escaped(input) == output)
    }

    /// A 206 whose Content-Range carries ESC sequences (that would turn the terminal red and
    /// clear the screen), DEL and a C1 CSI: the error names it, escaped, and stderr holds no
    /// ESC byte. (CR and LF cannot be sent inside a header line; the table covers them.)
    @Test func aContentRangeWithEscapesReachesStderrEscaped() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let out = try TemporaryDirectory()
        let evil = "bytes \u{1B}[31m\u{1B}[2J0-0/5\u{7F}\u{9B}"
        let query = "nohead=1&contentrange=" + (evil.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        let result = try runCLI([server.dataURL(size: 1000, query), "-o", out.file("e.bin"), "--max-tries", "1"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("Content-Range bytes \\e[31m\\e[2J0-0/5\\x7F"), "\(result.stderr)")
        #expect(!result.stderr.utf8.contains(0x1B), "\(result.stderr)")
        // The server sends U+009B as the single byte 0x9B (Latin-1), not UTF-8: decoded as U+FFFD.
        #expect(!result.stderr.contains("\u{9B}"))
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }
}
