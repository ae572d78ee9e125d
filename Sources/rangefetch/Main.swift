import ArgumentParser
import CFileShims
#if canImport(Glibc)
import Glibc
#endif
import RangeFetch

@main
enum Main {
    static func main() async {
        signal(SIGPIPE, SIG_IGN)
        limitMallocArenas()
        let command: ParsableCommand
        let arguments: [String]
        // Run under the name aria2c (a symlink): aria2c's command line, as front-ends pass it.
        if CommandLine.arguments.first?.split(separator: "/").last == "aria2c" {
            await runAsAria2c(Array(CommandLine.arguments.dropFirst()))
        }
        let given = CommandSyntax.normalize(Array(CommandLine.arguments.dropFirst()))
        SecretArguments.blank()
        do {
            arguments = try ConfigFile.expand(given) { line in
                do {
                    _ = try Get.parse(line + ["http://127.0.0.1/"])
                    return nil
                } catch {
                    return UsageAdvice.rewrite(Get.message(for: error))
                }
            }
        } catch {
            writeOut("rangefetch: error: \(error.message)\n", to: STDERR_FILENO)
            exit(ExitStatus.usage)
        }
        do {
            command = try RangeFetchCommand.parseAsRoot(arguments)
        } catch {
            exitForParseError(error)
        }
        do {
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                var plain = command
                try plain.run()
            }
        } catch let failure as CommandFailure {
            exit(failure.status)
        } catch {
            exitForParseError(error)
        }
        exit(ExitStatus.success)
    }

    /// Most threads (batch workers, their write lanes) allocate little, but glibc gives each its
    /// own malloc arena, whose freed memory it keeps: a batch of 8 files of 128 MiB at `-j 4` or
    /// `-j 8` peaked at 39–45 MiB RSS with the default arenas, 35–37 MiB with two, at the same
    /// speed; a single download stays at 31 MiB either way. `MALLOC_ARENA_MAX` still wins.
    private static func limitMallocArenas() {
        guard getenv("MALLOC_ARENA_MAX") == nil else { return }
        _ = cfs_limit_malloc_arenas(2)
    }

    private static func runAsAria2c(_ arguments: [String]) async -> Never {
        do {
            try await Aria2c.start(arguments)
        } catch let failure as CommandFailure {
            exit(failure.status)
        } catch {
            writeOut("rangefetch aria2c: error: \(error)\n", to: STDERR_FILENO)
            exit(ExitStatus.other)
        }
        exit(ExitStatus.success)
    }

    /// Argument errors exit 2 (not ArgumentParser's 64) so scripts see one usage code.
    private static func exitForParseError(_ error: Error) -> Never {
        let code = RangeFetchCommand.exitCode(for: error)
        let message = UsageAdvice.rewrite(RangeFetchCommand.fullMessage(for: error))
        if code == .success {
            print(message)
            exit(ExitStatus.success)
        }
        writeOut(message + "\n", to: STDERR_FILENO)
        exit(ExitStatus.usage)
    }
}

/// Thrown by subcommands after they have reported a failure; carries the exit status.
struct CommandFailure: Error {
    var status: Int32
}

struct RangeFetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rangefetch",
        abstract: "Fast, resumable, verified HTTP(S) downloads over parallel byte ranges.",
        discussion: """
        rangefetch probes the file, splits it into byte ranges and fetches them over parallel connections straight into NAME.part, which becomes NAME only when every byte has arrived (and matched any checksum). Interrupted downloads resume when the same command is run again.

        `rangefetch bench URL` measures how fast this machine can pull from a server and how many connections pay off.

        `rangefetch daemon` keeps a queue that aria2's clients drive over JSON-RPC; `rangefetch add URL`, `ls`, `pause`, `resume`, `rm` and `watch` drive a running one from the shell.

        `rangefetch hf://ORG/NAME[@REV]` downloads a Hugging Face repository into the Hub's cache, where huggingface_hub's tools find it (--include, --exclude; HF_TOKEN).

        Examples:
          rangefetch https://example.com/big.iso
          rangefetch -n 16 -d ~/Downloads https://example.com/model.safetensors
          rangefetch --checksum sha256=9f86d08... -o out.bin https://example.com/file
          rangefetch verify out.bin --checksum-file SHA256SUMS
          rangefetch bench https://example.com/big.iso
          rangefetch hf://Qwen/Qwen3-0.6B --include '*.safetensors'

        Common options (rangefetch get --help lists all; a config file holds defaults):
          -o PATH, -o -, -O, -d DIR   where the file goes (-: to stdout, in order)
          -J                          the server's name for it (default: the URL's)
          -n N|auto                   TCP connections (default auto, up to 64)
          -c, --continue              a file already at the path is the first bytes
          --checksum sha256=HEX       checked before the file is moved into place
          -i LIST, -j N               a list of URLs, N files at once
          --limit-rate RATE           cap the total speed
          -H 'Name: value', -u USER:PASS, --proxy URL, --cacert FILE, -k
          -q, -v, --json              quiet, a line per request, JSON lines

        The bar ends with '16 conns', or '24/32 conns' while the count moves: 24 open now, 32 wanted (-n auto growing or giving back, or fewer after a server refused connections); 'h2' when they share HTTP/2.

        Exit codes: 0 ok, 1 other, 2 usage, 3 network/HTTP, 4 file system, 5 checksum, 130 interrupted.

        Shell completions and the man page: scripts/install-extras.sh (see the README).
        """,
        version: RangeFetchVersion.string,
        subcommands: [Get.self, Verify.self, Bench.self, Daemon.self, AddVerb.self, ListVerb.self, PauseVerb.self, ResumeVerb.self,
                      RemoveVerb.self, WatchVerb.self, Aria2c.self],
        defaultSubcommand: Get.self
    )
}
