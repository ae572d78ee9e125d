import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The list parser's shortcut for lines without surrounding white space trims as the general
/// trimming does.
struct ManifestLineTrimTests {
    @Test(arguments: ["http://h/f", " http://h/f", "http://h/f ", "\thttp://h/f\r", "  ", "", "x", "\r\n", "a\r\n",
                      " \u{301}x", "x \u{301}", "caf\u{e9}", "\u{e9} "])
    func trimsAsTheGeneralTrimming(line: String) {
        #expect(ManifestParser.trimmed(line[...]) == line[...].trimmingCharacters())
    }
}
