#if canImport(Glibc)
import Glibc
#endif
import RangeFetch

/// Blanks the value of `-u`/`--user` in the process's own argument memory once it has been read,
/// as curl does, so `ps` and `/proc/PID/cmdline` do not show the password for the whole download.
/// The value is found as getopt finds it (``CommandSyntax``): `-u USER:PASS`, `-uUSER:PASS`,
/// `-u=USER:PASS`, `--user USER:PASS`, `--user=USER:PASS`, and within a cluster (`-qu USER:PASS`,
/// `-quUSER:PASS`).
enum SecretArguments {
    /// The letter and long option whose value is a secret.
    static let letter: Character = "u"
    static let longOption = "--user"

    /// Overwrites each secret value in `CommandLine.unsafeArgv` with `*`. Call after
    /// `CommandLine.arguments` has been read (it copies the arguments).
    static func blank() {
        let count = Int(CommandLine.argc)
        let argv = CommandLine.unsafeArgv
        var words: [String] = []
        for index in 1..<max(1, count) {
            guard let pointer = argv[index] else { break }
            words.append(String(cString: pointer))
        }
        for (index, start) in secretSpans(in: words) {
            guard let pointer = argv[index + 1] else { continue }
            overwrite(pointer, from: start)
        }
    }

    /// Where the secrets of `words` (the arguments without the program name) are: the index of a
    /// word and the byte offset its secret starts at.
    static func secretSpans(in words: [String]) -> [(word: Int, offset: Int)] {
        let (syntax, start) = CommandSyntax.command(of: words)
        var spans: [(word: Int, offset: Int)] = []
        var index = start
        while index < words.count {
            let word = words[index]
            index += 1
            if word == "--" { break }
            if word == longOption {
                if index < words.count { spans.append((index, 0)) }
                index += 1
                continue
            }
            if word.hasPrefix(longOption + "=") {
                spans.append((index - 1, longOption.utf8.count + 1))
                continue
            }
            if syntax.valueLongOptions.contains(word) {
                index += 1
                continue
            }
            if word.hasPrefix("-u="), word.utf8.count > 3 {
                spans.append((index - 1, 3))
                continue
            }
            guard let parts = syntax.parts(of: word), case .value(let letter, let value)? = parts.last else { continue }
            if let value {
                if letter == Self.letter { spans.append((index - 1, word.utf8.count - value.utf8.count)) }
            } else {
                if letter == Self.letter, index < words.count { spans.append((index, 0)) }
                index += 1
            }
        }
        return spans
    }

    private static func overwrite(_ pointer: UnsafeMutablePointer<CChar>, from start: Int) {
        var offset = start
        while pointer[offset] != 0 {
            pointer[offset] = 0x2A // "*"
            offset += 1
        }
    }
}
