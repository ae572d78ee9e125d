/// How getopt reads a command line's short options, so flags typed as curl, wget and aria2c users
/// type them (`-n16`, `-x16 -s16`, `-o-`, `-dDIR`, `-qu USER:PASS`) mean what they mean there.
///
/// The CLI's parser reads `-n16` as three flags (`-n -1 -6`); this value knows which letters take
/// a value and rewrites each word the way getopt reads it, into the `-n=16` form the parser
/// takes. A word is read as a cluster of short options only when every letter up to the value is
/// a known one; anything else is left for the parser to judge (and name in its error).
///
/// | word       | ``parts(of:)``                      | ``normalize(_:)``  |
/// |------------|-------------------------------------|--------------------|
/// | `-n16`     | `n` = "16"                          | `-n=16`            |
/// | `-qn16`    | flag `q`, `n` = "16"                | `-q -n=16`         |
/// | `-o-`      | `o` = "-"                           | `-o=-`             |
/// | `-qu` `X`  | flag `q`, `u` = the next word       | `-q -u X`          |
/// | `-n` `-1`  | `n` = the next word                 | `-n=-1` (a value, not an option) |
/// | `-cJ`      | flags `c`, `J`                      | `-c -J`            |
/// | `-n=16`    | nil (the parser's own form)         | unchanged          |
/// | `-qz`, `-1`, `-`, `--long` | nil                 | unchanged          |
///
/// After `--` nothing is rewritten. The word after an option that takes a separate value is its
/// value and is never read as options; it is joined to its option (`--retry-wait=-1`) only when it
/// is `-` or a negative number, which the parser would otherwise take for an option.
package struct ShortOptionSyntax: Sendable, Equatable {
    /// Letters that take a value (`o` for `-o PATH`).
    package var valueLetters: Set<Character>
    /// Letters that are flags (`q` for `-q`).
    package var flagLetters: Set<Character>
    /// Long options that take a value, with their dashes (`--output`).
    package var valueLongOptions: Set<String>
    /// Whole words read as other words (wget's `-O-`, standard output, where `-O` is a flag here).
    package var aliases: [String: [String]]

    package init(valueLetters: Set<Character>, flagLetters: Set<Character>, valueLongOptions: Set<String> = [],
                 aliases: [String: [String]] = [:]) {
        self.valueLetters = valueLetters
        self.flagLetters = flagLetters
        self.valueLongOptions = valueLongOptions
        self.aliases = aliases
    }

    /// One option of a cluster.
    package enum Part: Equatable, Sendable {
        case flag(Character)
        /// A letter that takes a value: the rest of the word, or nil when it is the next word.
        case value(Character, String?)
    }

    /// The options `word` holds, or nil when it is not a cluster of known short options.
    package func parts(of word: String) -> [Part]? {
        guard word.count >= 2, word.hasPrefix("-"), !word.hasPrefix("--") else { return nil }
        var rest = word.dropFirst()
        // `-n=16` is the parser's own spelling of a value; leave it to the parser.
        if rest.count >= 2, rest[rest.index(after: rest.startIndex)] == "=" { return nil }
        var parts: [Part] = []
        while let letter = rest.first {
            rest = rest.dropFirst()
            if flagLetters.contains(letter) {
                parts.append(.flag(letter))
            } else if valueLetters.contains(letter) {
                parts.append(.value(letter, rest.isEmpty ? nil : String(rest)))
                return parts
            } else {
                return nil
            }
        }
        return parts
    }

    /// `arguments` (without the program name) with every cluster written out as separate
    /// options and every attached value in the parser's `-n=16` form.
    package func normalize(_ arguments: [String]) -> [String] {
        var out: [String] = []
        var index = 0
        func takeValue(of option: String) {
            guard index < arguments.count else { out.append(option); return }
            let value = arguments[index]
            index += 1
            if Self.staysSeparate(value) {
                out.append(option)
                out.append(value)
            } else {
                out.append(option + "=" + value)
            }
        }
        while index < arguments.count {
            let word = arguments[index]
            index += 1
            if word == "--" {
                out += arguments[(index - 1)...]
                return out
            }
            if let alias = aliases[word] {
                out += alias
                continue
            }
            if valueLongOptions.contains(word) {
                takeValue(of: word)
                continue
            }
            guard let parts = parts(of: word) else {
                out.append(word)
                continue
            }
            for part in parts {
                switch part {
                case .flag(let letter):
                    out.append("-\(letter)")
                case .value(let letter, let value?):
                    out.append("-\(letter)=\(value)")
                case .value(let letter, nil):
                    takeValue(of: "-\(letter)")
                }
            }
        }
        return out
    }

    /// Whether the parser reads `value`, the word after an option, as that option's value as it
    /// stands: false for `-` and a negative number, which it would take for an option (getopt
    /// takes them as the value), so they are joined to their option.
    private static func staysSeparate(_ value: String) -> Bool {
        guard value.hasPrefix("-") else { return true }
        if value == "-" { return false }
        let rest = value.dropFirst()
        guard let first = rest.first else { return true }
        return !(first.isNumber || first == ".")
    }
}
