import ArgumentParser
import RangeFetch

/// What a command-line value should have been. ArgumentParser prints it after
/// "The value 'X' is invalid for '--option <name>': ", so it says what is expected.
struct ArgumentProblem: Error, CustomStringConvertible {
    let description: String
}

/// A command-line value parsed and bounds-checked in one place, when the arguments are parsed:
/// the option's property holds the checked value, not its text.
///
/// Options declare `transform: T.parse` so a bad value's message says what is expected
/// (`ExpressibleByArgument` alone can only say that it is invalid).
protocol CheckedArgument: ExpressibleByArgument {
    static func parse(_ text: String) throws(ArgumentProblem) -> Self
}

extension CheckedArgument {
    init?(argument: String) {
        guard let value = try? Self.parse(argument) else { return nil }
        self = value
    }
}

/// `-n N|auto`: a fixed count of connections (1 to 64) or `auto`.
struct ConnectionCountArgument: CheckedArgument, Equatable {
    var count: DownloadOptions.ConnectionCount

    static func parse(_ text: String) throws(ArgumentProblem) -> Self {
        if text.lowercased() == "auto" { return Self(count: .automatic) }
        guard let number = Int(text), DownloadOptions.connectionRange.contains(number) else {
            throw ArgumentProblem(description: "expected 'auto' or a number of connections between 1 and 64")
        }
        return Self(count: .fixed(number))
    }

    var defaultValueDescription: String {
        if case .fixed(let number) = count { "\(number)" } else { "auto" }
    }
}

/// A size or a rate with K/M/G suffixes (`10M`), at least some smallest value.
struct ByteCountArgument: Equatable {
    var bytes: Int64

    /// `text` as a count of at least `smallest` bytes; `expected` is what the message asks for.
    static func parse(_ text: String, atLeast smallest: Int64, expected: String) throws(ArgumentProblem) -> Self {
        guard let bytes = ByteCount.parse(text), bytes >= smallest else { throw ArgumentProblem(description: "expected \(expected)") }
        return Self(bytes: bytes)
    }

    /// `--stream-window`.
    static func streamWindow(_ text: String) throws(ArgumentProblem) -> Self {
        try parse(text, atLeast: DownloadOptions.smallestStreamWindowBytes, expected: "a size of at least 1M, like 64M")
    }

    /// `--min-segment`.
    static func minimumSegment(_ text: String) throws(ArgumentProblem) -> Self {
        try parse(text, atLeast: DownloadOptions.smallestSegmentBytes, expected: "a size of at least 16K, like 1M")
    }

    /// `--max-speed`.
    static func maximumSpeed(_ text: String) throws(ArgumentProblem) -> Self {
        try parse(text, atLeast: 1024, expected: "a rate of at least 1K, like 10M")
    }

    /// `--speed-limit`.
    static func speedLimit(_ text: String) throws(ArgumentProblem) -> Self {
        try parse(text, atLeast: 0, expected: "a rate like 1K, or 0 for none")
    }

    /// `bench --bytes`.
    static func benchBytes(_ text: String) throws(ArgumentProblem) -> Self {
        try parse(text, atLeast: 1, expected: "a size of at least 1 byte, like 512M")
    }
}

/// `--shard K/N`.
struct ShardArgument: CheckedArgument, Equatable {
    var selector: ShardSelector

    static func parse(_ text: String) throws(ArgumentProblem) -> Self {
        do {
            return Self(selector: try ShardSelector(parsing: text))
        } catch {
            throw ArgumentProblem(description: error.message)
        }
    }
}

/// `--print-digest ALGO`.
struct DigestAlgorithmArgument: CheckedArgument, Equatable {
    var algorithm: DigestAlgorithm

    static func parse(_ text: String) throws(ArgumentProblem) -> Self {
        guard let algorithm = DigestAlgorithm(name: text) else {
            throw ArgumentProblem(description: "expected sha256, sha512, sha1, md5, crc32, crc32c or crc64nvme")
        }
        return Self(algorithm: algorithm)
    }
}

/// `-x`: aria2c's most connections to one host (1 to 64), or, when not a number, curl's proxy.
enum PerHostOrProxyArgument: CheckedArgument, Equatable {
    case perHost(Int)
    case proxy(String)

    static func parse(_ text: String) throws(ArgumentProblem) -> Self {
        guard let number = Int(text) else { return .proxy(text) }
        guard DownloadOptions.connectionRange.contains(number) else {
            throw ArgumentProblem(description: "expected a number of connections between 1 and 64, or a proxy URL")
        }
        return .perHost(number)
    }

    var perHost: Int? { if case .perHost(let count) = self { count } else { nil } }
    var proxy: String? { if case .proxy(let url) = self { url } else { nil } }
}

/// `bench -n 1,2,4,8`: the connection counts to measure, as numbers (their bounds and order are
/// ``BenchPlan/problem()``'s to judge).
struct ConnectionCountsArgument: CheckedArgument, Equatable {
    var counts: [Int]

    static func parse(_ text: String) throws(ArgumentProblem) -> Self {
        let items = text.split(separator: ",", omittingEmptySubsequences: false).map { Int(String($0).filter { $0 != " " }) }
        guard !items.isEmpty, items.allSatisfy({ $0 != nil }) else {
            throw ArgumentProblem(description: "expected counts like 1,2,4,8")
        }
        return Self(counts: items.compactMap { $0 })
    }

    var defaultValueDescription: String { counts.map(String.init).joined(separator: ",") }
}

/// `bench --sink null|disk`.
struct BenchSinkArgument: CheckedArgument, Equatable {
    var sink: BenchPlan.Sink

    static func parse(_ text: String) throws(ArgumentProblem) -> Self {
        guard let sink = BenchPlan.Sink(rawValue: text) else { throw ArgumentProblem(description: "expected null or disk") }
        return Self(sink: sink)
    }

    var defaultValueDescription: String { sink.rawValue }
}
