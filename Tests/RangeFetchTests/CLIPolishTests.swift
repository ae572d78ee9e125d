import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// What users expect of a CLI: help that reads at 80 columns, completions, a man page, JSON that
/// matches its schema, `--verbose`, `NO_COLOR` and a bar that fits the terminal.
@Suite(.serialized)
final class CLIPolishTests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let nginx: NginxServer

    init() throws {
        (www, out, nginx) = try NginxServer.withScratchDirectories()
    }

    static let helpCommands: [[String]] = [["--help"], ["get", "--help"], ["bench", "--help"], ["verify", "--help"]]

    @Test(arguments: helpCommands)
    func helpFitsEightyColumns(arguments: [String]) throws {
        let result = try runCLI(arguments, environment: ["COLUMNS": "80"])
        #expect(result.status == 0)
        for line in result.stdout.split(separator: "\n") { #expect(line.count <= 80, "\(arguments): \(line.count): \(line)") }
    }

    /// The main help's table of common options keeps each option on one line at 80 columns (a
    /// wrapped description would start again at column 0), and explains the bar's N/M conns.
    @Test func commonOptionsStayInTheirColumnsAtEightyColumns() throws {
        let top = try runCLI(["--help"], environment: ["COLUMNS": "80"])
        let lines = top.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("Common options") }) else {
            Issue.record("no common options in \(top.stdout)")
            return
        }
        let table = lines[(start + 1)...].prefix { !$0.isEmpty }
        #expect(table.count >= 8)
        for line in table { #expect(line.hasPrefix("  -"), "a wrapped line: '\(line)'") }
        #expect(top.stdout.contains("24/32 conns") && !top.stdout.contains("  now"), "\(top.stdout)")
        let bench = try runCLI(["bench", "--help"], environment: ["COLUMNS": "80"])
        #expect(bench.stdout.contains("jq -r 'select(.verdict).verdict'"), "\(bench.stdout)")
    }

    @Test func helpParagraphsHaveNoHardLineBreaks() throws {
        // Wide enough that ArgumentParser wraps nothing: each paragraph must be one line.
        let top = try runCLI(["--help"], environment: ["COLUMNS": "400"])
        #expect(top.stdout.contains("fetches them over parallel connections straight into NAME.part, which becomes NAME only"))
        let get = try runCLI(["get", "--help"], environment: ["COLUMNS": "400"])
        #expect(get.stdout.contains("resume journal NAME.part.rfjournal. Running the same command again after Ctrl-C"))
        // Example lines stay lines of their own.
        #expect(get.stdout.contains("\n  rangefetch -n 16 -o /data/w.bin https://host/w  # 16 connections"))
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScriptsGenerateAndKnowTheSubcommands(shell: String) throws {
        let result = try runCLI(["--generate-completion-script", shell])
        #expect(result.status == 0, "\(result.stderr)")
        for subcommand in ["get", "verify", "bench"] { #expect(result.stdout.contains(subcommand), "\(shell) lacks \(subcommand)") }
        #expect(result.stdout.contains("connections"))
    }

    @Test func manPageIsCommittedAndCoversEverySubcommand() throws {
        let page = try String(contentsOfFile: SchemaValidation.repository + "/docs/rangefetch.1", encoding: .utf8)
        #expect(page.hasPrefix(".\\\""))
        for text in [".Sh NAME", "bench", "verify", "full-sweep", "checksum-file", "mirror", "stream-window"] {
            #expect(page.contains(text), "man page lacks \(text)")
        }
        // What curl.1 and wget2.1 have: a synopsis with the URL, every exit code, the
        // environment, the files, related commands; and no example cut short by the generator.
        for text in [".Ar URL", ".It 130", ".It 5", ".Sh ENVIRONMENT", "https_proxy", "AWS_ACCESS_KEY_ID", ".Sh FILES",
                     "NAME.part.rfjournal", ".Sh SEE ALSO", ".Xr curl 1"] {
            #expect(page.contains(text), "man page lacks \(text)")
        }
        #expect(!page.contains("\": ,") && !page.contains(".Ex -std"))
    }

    @Test func downloadJSONMatchesTheSchemaWithVersionFirst() throws {
        try www.randomFile("f.bin", size: 8 << 20)
        let result = try runCLI(["--json", "-v", "-n", "4", "-d", out.path, "--checksum-file", "/dev/null", nginx.baseURL + "/f.bin"])
        // An empty checksum file has no entry: a usage error, reported as a JSON error event.
        #expect(result.status == 2)
        try SchemaValidation.expectValid(result.stdout)
        let ok = try runCLI(["--json", "-v", "-n", "4", "-d", out.path, "--print-digest", "sha256", nginx.baseURL + "/f.bin"])
        #expect(ok.status == 0, "\(ok.stderr)")
        // Every line is an event, the digest too (no sha256sum line in the stream), before finish.
        let lines = ok.stdout.split(separator: "\n")
        #expect(lines.allSatisfy { $0.hasPrefix("{\"version\":1,\"event\":") }, "\(ok.stdout.suffix(400))")
        let digest = try Checksums.sha256sum(out.file("f.bin"))
        let digestLine = lines.firstIndex { $0.contains("\"event\":\"digest\"") && $0.contains(digest) }
        #expect(digestLine != nil && digestLine == lines.count - 2, "\(ok.stdout.suffix(400))")
        #expect(lines.contains { $0.contains("\"event\":\"request\"") })
        #expect(lines.contains { $0.contains("\"event\":\"finish\"") })
        try SchemaValidation.expectValid(lines.joined(separator: "\n") + "\n")
    }

    @Test func verboseListsEveryRequestAndQuietConflicts() throws {
        try www.randomFile("v.bin", size: 8 << 20)
        // From /slow/ (4 MiB/s a request) connections that finish first take over the others' tails.
        let result = try runCLI(["-v", "-n", "4", "--min-segment", "1M", "-d", out.path, nginx.baseURL + "/slow/v.bin"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("bytes ") }
        #expect(lines.count >= 4, "\(result.stderr)")
        #expect(lines.allSatisfy { $0.contains(": HTTP 206 (h1.1), ") && $0.contains("/s)") })
        // A tail another connection took over is ended by us, not failed.
        #expect(!result.stderr.contains("Failed writing"), "\(result.stderr)")
        let quiet = try runCLI(["-v", "-q", "-d", out.path, nginx.baseURL + "/v.bin"])
        #expect(quiet.status == 2)
        #expect(quiet.stderr.contains("not both"))
    }

    @Test func takeoverWarningsShowOnlyWhenVerbose() throws {
        let server = try FaultServer()
        defer { server.stop() }
        // Every connection is capped at 2 MB/s; the first range trickles at 10 kB/s.
        let size: Int64 = 32 << 20
        let url = { (name: String) in server.dataURL(size: size, name: name, "rate=2000000&trickle=10000&trickleoffset=0&tricklecount=1") }
        let plain = try runCLI(["-n", "8", "-d", out.path, url("plain.bin")])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(!plain.stderr.contains("took over"), "\(plain.stderr)")
        let verbose = try runCLI(["-n", "8", "-v", "-d", out.path, url("verbose.bin")])
        #expect(verbose.status == 0, "\(verbose.stderr)")
        #expect(verbose.stderr.contains("took over"), "\(verbose.stderr)")
        // Routine: a note, not a warning.
        let takeovers = verbose.stderr.split(separator: "\n").filter { $0.contains("took over") }
        #expect(takeovers.allSatisfy { $0.hasPrefix("note: ") }, "\(takeovers)")
    }

    /// A server refusing connections (503) is said once, however many times the count drops.
    @Test func refusedConnectionsAreWarnedOfOnce() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let url = server.dataURL(size: 32 << 20, name: "r.bin", "maxconcurrent=2&retryafter=0&rate=8000000")
        let result = try runCLI(["-n", "32", "--min-segment", "256K", "-o", out.file("r.bin"), url])
        #expect(result.status == 0, "\(result.stderr)")
        let warnings = result.stderr.split(separator: "\n").filter { $0.contains("server refused connections") }
        #expect(warnings.count == 1, "\(result.stderr)")
        #expect(warnings.first?.contains("HTTP 503") == true, "\(warnings)")
    }

    /// Runs `command` under a pseudo-terminal (`script`), so the CLI sees a tty.
    private func onTerminal(_ command: String, environment: [String: String] = [:]) throws -> TestProcess.Result {
        try TestProcess.run("/usr/bin/script", ["-qec", command, "/dev/null"], environment: environment)
    }

    @Test func emphasisOnlyOnATerminalWithoutNoColor() throws {
        try www.randomFile("c.bin", size: 4 << 20)
        let binary = try TestProcess.rangefetchBinary
        let command = "\(binary) bench --runs 1 -n 1 \(nginx.baseURL)/c.bin"
        // The test runner's own environment may carry NO_COLOR: drop it for this run.
        let colored = try onTerminal("env -u NO_COLOR " + command, environment: ["TERM": "xterm"])
        #expect(colored.status == 0, "\(colored.stdout)")
        #expect(colored.stdout.contains("\u{1B}[1m"), "no bold on a terminal")
        let plain = try onTerminal(command, environment: ["TERM": "xterm", "NO_COLOR": "1"])
        #expect(plain.status == 0)
        #expect(plain.stdout.contains("recommended: -n 1"))
        #expect(!plain.stdout.contains("\u{1B}["), "NO_COLOR still got escapes")
        let piped = try runCLI(["bench", "--runs", "1", "-n", "1", nginx.baseURL + "/c.bin"])
        #expect(!piped.stdout.contains("\u{1B}["))
    }

    @Test(arguments: [40, 60])
    func barRedrawsFitANarrowTerminal(columns: Int) throws {
        try www.randomFile("n.bin", size: 6 << 20)
        let binary = try TestProcess.rangefetchBinary
        let result = try onTerminal("\(binary) -n 2 --max-speed 4M -d \(out.path) --overwrite \(nginx.baseURL)/n.bin",
                                    environment: ["COLUMNS": String(columns)])
        #expect(result.status == 0, "\(result.stdout)")
        let frames = result.stdout.split(whereSeparator: { $0 == "\r" || $0 == "\n" }).filter { $0.contains("MiB/s") && !$0.hasPrefix("saved") }
        #expect(frames.count >= 2, "\(result.stdout)")
        for frame in frames { #expect(frame.count < columns, "\(columns): \(frame.count): '\(frame)'") }
    }
}
