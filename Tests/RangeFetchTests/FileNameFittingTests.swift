import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// How a name is made safe, by who offered it, and cut so every file beside it fits `NAME_MAX`.
struct FileNameFittingTests {
    @Test func theLimitLeavesRoomForTheLongestSuffix() {
        #expect(FileName.maximumBytes == 236)
        #expect((String(repeating: "a", count: FileName.maximumBytes) + ".part.rfjournal.tmp").utf8.count == 255)
    }

    /// (raw, expected): at the limit (236 bytes), at `NAME_MAX` and either side of it (254, 255,
    /// 256 bytes), with 2-, 3- and 4-byte characters where the cut would split one.
    static let cuts: [(String, String)] = [
        (String(repeating: "a", count: 236), String(repeating: "a", count: 236)),
        (String(repeating: "a", count: 237), String(repeating: "a", count: 236)),
        // 3-byte characters, 256 bytes with the extension: 232 bytes left for the stem, 77 whole characters.
        (String(repeating: "日", count: 84) + ".bin", String(repeating: "日", count: 77) + ".bin"),
        // 2-byte characters, 255 bytes: 231 bytes for the stem, 115 whole characters.
        (String(repeating: "é", count: 125) + ".safe", String(repeating: "é", count: 115) + ".safe"),
        // 4-byte characters, 254 bytes: 230 bytes for the stem, 57 whole characters.
        (String(repeating: "😀", count: 62) + ".ggufx", String(repeating: "😀", count: 57) + ".ggufx"),
        // One byte over with a loop-byte character across the cut: the whole character goes.
        ("a" + String(repeating: "é", count: 118), "a" + String(repeating: "é", count: 117)),
        // An "extension" longer than 32 bytes is part of the name and is cut like it.
        ("a." + String(repeating: "b", count: 300), "a." + String(repeating: "b", count: 234)),
        // The extension kept is the last one only.
        (String(repeating: "m", count: 250) + ".tar.gz", String(repeating: "m", count: 233) + ".gz"),
        // A name that is all leading dot (a hidden name from the URL) has no extension to keep.
        ("." + String(repeating: "p", count: 300), "." + String(repeating: "p", count: 235)),
    ]

    @Test(arguments: cuts)
    func longNamesAreCutOnACharacterBoundaryKeepingTheExtension(raw: String, expected: String) {
        let fitted = FileName.fitted(raw)
        #expect(fitted == expected, "\(raw.utf8.count) bytes gave \(fitted.utf8.count): \(fitted)")
        #expect(fitted.utf8.count <= FileName.maximumBytes)
        #expect(FileName.usable(raw, from: .userURL) == expected)
    }

    /// (raw, who offered it, expected; nil: nothing usable).
    static let origins: [(String, FileName.Origin, String?)] = [
        (".bashrc", .server, "bashrc"),
        (".bashrc", .userURL, ".bashrc"),
        ("..profile", .server, "profile"),
        (" .hidden ", .server, "hidden"),
        ("\u{0}.evil", .server, "evil"),
        ("dir/.ssh", .server, "ssh"),
        ("...", .server, nil),
        ("...", .userURL, "..."),
        (".", .userURL, nil),
        ("..", .userURL, nil),
        ("..", .server, nil),
        ("a\u{7}b\u{1B}[31m\u{7F}.txt", .server, "ab[31m.txt"),
        ("line\r\nbreak.bin", .userURL, "linebreak.bin"),
        ("report.pdf", .server, "report.pdf"),
        ("v1.2.tar.gz", .userURL, "v1.2.tar.gz"),
        ("\u{1}\u{2}", .server, nil),
    ]

    @Test(arguments: origins)
    func aServerNeverGetsAHiddenNameOrAControlCharacter(raw: String, origin: FileName.Origin, expected: String?) {
        #expect(FileName.usable(raw, from: origin) == expected)
        #expect(FileName.sanitize(raw, from: origin) == expected ?? FileName.fallback)
    }
}
