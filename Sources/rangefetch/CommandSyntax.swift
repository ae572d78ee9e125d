import RangeFetch

/// Each command's short options, as getopt would read them (``ShortOptionSyntax``): `-n16`,
/// `-x16 -s16`, `-j16`, `-o-`, `-dDIR` and `-qu USER:PASS` mean what they mean to curl, wget and
/// aria2c. A new short option goes here too (`CLIPolishTests.everyShortOptionTakesAGluedValue`
/// runs each glued to its value).
enum CommandSyntax {
    /// Options every command shares (``NetworkOptions``, help).
    private static let networkValueLongOptions: Set<String> = [
        "--header", "--user", "--user-agent", "--cacert", "--max-speed", "--limit-rate", "--speed-limit", "--speed-time",
        "--proxy", "--proxy-header", "--noproxy", "--netrc-file", "--resolve", "--connect-to", "--connect-timeout",
        "--max-tries", "--retry-wait",
    ]
    private static let networkValueLetters: Set<Character> = ["H", "u", "A"]
    private static let networkFlagLetters: Set<Character> = ["k", "4", "6", "h"]

    /// `rangefetch [get]`.
    static let get = ShortOptionSyntax(
        valueLetters: networkValueLetters.union(["o", "d", "n", "x", "s", "i", "j"]),
        flagLetters: networkFlagLetters.union(["q", "v", "c", "O", "J"]),
        valueLongOptions: networkValueLongOptions.union([
            "--output", "--dir", "--connections", "--max-connections", "--max-connections-per-host", "--min-segment",
            "--stream-window", "--mirror", "--checksum", "--checksum-file", "--print-digest", "--input-file", "--jobs",
            "--shard", "--config",
        ]),
        // wget's -O- (the document to standard output); -O is curl's flag here.
        aliases: ["-O-": ["-o=-"]]
    )

    /// `rangefetch bench`.
    static let bench = ShortOptionSyntax(
        valueLetters: networkValueLetters.union(["n", "d"]),
        flagLetters: networkFlagLetters.union(["q"]),
        valueLongOptions: networkValueLongOptions.union(["--connections", "--duration", "--bytes", "--runs", "--sink", "--dir", "--csv"])
    )

    /// `rangefetch daemon`.
    static let daemon = ShortOptionSyntax(
        valueLetters: networkValueLetters.union(["d", "j"]),
        flagLetters: networkFlagLetters,
        valueLongOptions: networkValueLongOptions.union(["--rpc-listen-port", "--rpc-secret", "--dir", "--state-dir",
                                                         "--max-concurrent-downloads"])
    )

    /// `rangefetch add`, `ls`, `pause`, `resume`, `rm`, `watch` (a running daemon's queue).
    static let verbs = ShortOptionSyntax(
        valueLetters: ["d", "o", "n"],
        flagLetters: ["h"],
        valueLongOptions: ["--rpc-port", "--rpc-secret", "--state-dir", "--dir", "--out", "--connections", "--checksum",
                           "--interval", "--count"]
    )

    /// `rangefetch verify`.
    static let verify = ShortOptionSyntax(
        valueLetters: networkValueLetters,
        flagLetters: networkFlagLetters,
        valueLongOptions: networkValueLongOptions.union(["--checksum", "--checksum-file", "--print-digest", "--metalink"])
    )

    /// The subcommand `arguments` (without the program name) name, and where its own arguments
    /// start: after the command's name, and after `--config FILE` or `--no-config` before it
    /// (``ConfigFile`` takes those out wherever they are).
    static func command(of arguments: [String]) -> (syntax: ShortOptionSyntax, start: Int) {
        var index = 0
        while index < arguments.count {
            switch arguments[index] {
            case "--no-config": index += 1
            case "--config": index += 2
            case let word where word.hasPrefix("--config="): index += 1
            case "bench": return (bench, index + 1)
            case "verify": return (verify, index + 1)
            case "daemon": return (daemon, index + 1)
            case "add", "ls", "pause", "resume", "rm", "watch": return (verbs, index + 1)
            case "aria2c": return (ShortOptionSyntax(valueLetters: [], flagLetters: [], valueLongOptions: []), arguments.count)
            case "get": return (get, index + 1)
            default: return (get, index)
            }
        }
        return (get, index)
    }

    /// `arguments` as getopt would read them, for the parser.
    static func normalize(_ arguments: [String]) -> [String] {
        let (syntax, start) = command(of: arguments)
        guard start <= arguments.count else { return arguments }
        return Array(arguments[..<start]) + syntax.normalize(Array(arguments[start...]))
    }
}
