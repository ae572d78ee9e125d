import FoundationEssentials

/// Usage errors for flags people bring from curl, wget and aria2c: the equivalent rangefetch
/// flag instead of the parser's nearest spelling, which could be one that throws a partial
/// download away (`--retry` is not `--restart`).
enum UsageAdvice {
    /// Flags of peers, with what to type here.
    static let equivalents: [String: String] = [
        "--retry": "--max-tries N (tries per range; retries continue from the last byte)",
        "-P": "-d DIR", "--directory-prefix": "-d DIR",
        "--no-check-certificate": "-k/--insecure", "--check-certificate": "-k/--insecure to turn checks off",
        "-C": "-c/--continue (and a partial NAME.part resumes without it)",
        "--max-connection-per-server": "-x N", "--split": "-s N or -n N",
        "--output-document": "-o PATH", "--out": "-o PATH",
        "-L": "nothing: redirects are always followed", "--location": "nothing: redirects are always followed",
        "--retry-wait": "--retry-wait S", "--tries": "--max-tries N", "-t": "--max-tries N",
        "--user-agent": "-A/--user-agent", "--max-download-limit": "--limit-rate RATE",
        "--input-file": "-i FILE", "--max-concurrent-downloads": "-j N",
    ]

    /// Flags the parser must never suggest for a mistyped one: they discard or replace files.
    static let destructive = ["--restart", "--overwrite"]

    /// ArgumentParser's message, with an equivalent named or a destructive suggestion removed.
    static func rewrite(_ message: String) -> String {
        guard let start = message.firstRange(of: "Unknown option '") else { return message }
        let rest = message[start.upperBound...]
        guard let end = rest.firstIndex(of: "'") else { return message }
        let flag = String(rest[..<end]).split(separator: "=").first.map(String.init) ?? ""
        let head = message[..<start.lowerBound] + "Unknown option '\(rest[..<end])'"
        if let equivalent = equivalents[flag] {
            return head + ". rangefetch's equivalent: \(equivalent)" + tail(of: message)
        }
        if destructive.contains(where: { message.contains("Did you mean '\($0)'") }) {
            return head + ". See 'rangefetch --help'" + tail(of: message)
        }
        return message
    }

    /// The lines after the first (ArgumentParser's usage reminder).
    private static func tail(of message: String) -> String {
        guard let newline = message.firstIndex(of: "\n") else { return "" }
        return String(message[newline...])
    }
}
