import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Flags typed as getopt reads them: glued values, clusters, `--`, negative numbers.
struct ShortOptionSyntaxTests {
    /// A syntax like `rangefetch get`'s.
    static let syntax = ShortOptionSyntax(
        valueLetters: ["o", "d", "n", "x", "s", "j", "u", "H"], flagLetters: ["q", "v", "c", "O", "J", "k", "4"],
        valueLongOptions: ["--output", "--retry-wait"], aliases: ["-O-": ["-o=-"]])

    static let normalized: [([String], [String])] = [
        (["-n16", "URL"], ["-n=16", "URL"]),
        (["-x16", "-s16", "URL"], ["-x=16", "-s=16", "URL"]),
        (["-j16", "A", "B"], ["-j=16", "A", "B"]),
        (["-o-", "URL"], ["-o=-", "URL"]),
        (["-O-", "URL"], ["-o=-", "URL"]),
        (["-dDIR", "URL"], ["-d=DIR", "URL"]),
        (["-d/tmp/a=b", "URL"], ["-d=/tmp/a=b", "URL"]),
        (["-qn16", "URL"], ["-q", "-n=16", "URL"]),
        (["-qu", "user:pass", "URL"], ["-q", "-u", "user:pass", "URL"]),
        (["-quuser:pass", "URL"], ["-q", "-u=user:pass", "URL"]),
        (["-cJ", "URL"], ["-c", "-J", "URL"]),
        (["-4", "URL"], ["-4", "URL"]),
        // Separate values stay separate, and are never read as options...
        (["-n", "16", "URL"], ["-n", "16", "URL"]),
        (["-H", "-n16", "URL"], ["-H", "-n16", "URL"]),
        (["-o", "-", "URL"], ["-o=-", "URL"]),
        // ...and a negative number is a value, as getopt reads it, so its message says why it is wrong.
        (["-n", "-1", "URL"], ["-n=-1", "URL"]),
        (["-n-1", "URL"], ["-n=-1", "URL"]),
        (["--retry-wait", "-1", "URL"], ["--retry-wait=-1", "URL"]),
        (["--retry-wait", "1", "URL"], ["--retry-wait", "1", "URL"]),
        (["--output", "--json"], ["--output", "--json"]),
        // The parser's own forms, unknown letters, long options and lone dashes are left to the parser.
        (["-n=16", "URL"], ["-n=16", "URL"]),
        (["-qz", "URL"], ["-qz", "URL"]),
        (["-1", "URL"], ["-1", "URL"]),
        (["-", "--json", "--output=x"], ["-", "--json", "--output=x"]),
        // After --, nothing is an option.
        (["-q", "--", "-n16", "-O-"], ["-q", "--", "-n16", "-O-"]),
        (["-n"], ["-n"]),
    ]

    @Test(arguments: normalized)
    func gluedValuesAndClustersReadAsGetoptReadsThem(arguments: [String], expected: [String]) {
        #expect(Self.syntax.normalize(arguments) == expected)
    }

    @Test func partsStopAtTheFirstLetterThatTakesAValue() {
        #expect(Self.syntax.parts(of: "-qvn16") == [.flag("q"), .flag("v"), .value("n", "16")])
        #expect(Self.syntax.parts(of: "-nq") == [.value("n", "q")])
        #expect(Self.syntax.parts(of: "-qu") == [.flag("q"), .value("u", nil)])
        #expect(Self.syntax.parts(of: "-qZ") == nil)
        #expect(Self.syntax.parts(of: "--quiet") == nil)
        #expect(Self.syntax.parts(of: "-") == nil)
        #expect(Self.syntax.parts(of: "URL") == nil)
    }
}
