import FoundationEssentials
import RangeFetch
#if canImport(Glibc)
import Glibc
#endif

/// Default options for downloads, one a line, as `.curlrc` and `aria2.conf` hold them:
///
///     # ~/.config/rangefetch/config
///     connections 8
///     --max-tries 10
///     header Authorization: Bearer …
///     continue
///
/// A line is a long option without (or with) its dashes, then its value after a space or `=`;
/// `#` starts a comment line. The lines become arguments placed before the command line's, so
/// the command line wins (a repeatable option such as `header` adds to them). They apply to
/// downloads (`rangefetch URL`, `rangefetch get`), not to `bench` or `verify`.
struct ConfigFile {
    /// Where it is read from unless `--config FILE` or `--no-config` says otherwise:
    /// `$XDG_CONFIG_HOME/rangefetch/config`, else `~/.config/rangefetch/config`.
    static var defaultPath: String? {
        if let xdg = Environment.value("XDG_CONFIG_HOME") { return xdg + "/rangefetch/config" }
        return Environment.value("HOME").map { $0 + "/.config/rangefetch/config" }
    }

    /// A line that cannot be an option: a usage error naming the file and line.
    struct Problem: Error {
        var message: String
    }

    /// Subcommands a config file does not apply to.
    static let otherCommands: Set<String> = ["bench", "verify", "help"]

    /// `arguments` (without the program name) with the config file's options in front of the
    /// download's own, and `--config FILE`/`--no-config` taken out.
    static func expand(_ arguments: [String], validate: (_ line: [String]) -> String?) throws(Problem) -> [String] {
        var rest = arguments
        var path = defaultPath
        var explicit = false
        if let index = rest.firstIndex(of: "--no-config") {
            rest.remove(at: index)
            path = nil
        }
        if let index = rest.firstIndex(where: { $0 == "--config" || $0.hasPrefix("--config=") }) {
            let option = rest.remove(at: index)
            if let equals = option.firstIndex(of: "=") {
                path = String(option[option.index(after: equals)...])
            } else {
                guard index < rest.count else { throw Problem(message: "--config takes a file") }
                path = rest.remove(at: index)
            }
            explicit = true
        }
        if let first = rest.first, otherCommands.contains(first) { return rest }
        guard let path else { return rest }
        if let problem = FilePermissions.problem(ofFileAt: path) {
            // Like ssh with its config: options from a file others could write (a header, a
            // proxy, `insecure`) are not taken.
            throw Problem(message: "config file \(path) \(problem): refusing to read it (chmod go-w \(path), or --no-config)")
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            if explicit { throw Problem(message: "cannot read config file \(path)") }
            return rest
        }
        let options = try parse(text, path: path, validate: validate)
        if rest.first == "get" { return ["get"] + options + rest.dropFirst() }
        return options + rest
    }

    /// The arguments a config file's text stands for.
    static func parse(_ text: String, path: String, validate: (_ line: [String]) -> String?) throws(Problem) -> [String] {
        var arguments: [String] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = trim(raw)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let split = line.firstIndex(where: { $0 == " " || $0 == "\t" || $0 == "=" })
            var name = String(split.map { line[..<$0] } ?? line[...])
            while name.hasPrefix("-") { name.removeFirst() }
            var value = split.map { trim(line[line.index(after: $0)...]) }
            if let quoted = value, quoted.count >= 2, let first = quoted.first, first == "\"" || first == "'", quoted.last == first {
                value = String(quoted.dropFirst().dropLast())
            }
            let option = name.count == 1 ? "-" + name : "--" + name
            let words = [option] + (value.map { [$0] } ?? [])
            if let problem = validate(words) {
                throw Problem(message: "config file \(path), line \(number + 1): \(problem)")
            }
            arguments += words
        }
        return arguments
    }

    private static func trim(_ text: Substring) -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        return String(text.drop(while: blank).reversed().drop(while: blank).reversed())
    }

}
