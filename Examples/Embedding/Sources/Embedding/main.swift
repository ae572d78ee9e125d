import RangeFetch

/// Usage: Embedding BASE_URL DIRECTORY
/// BASE_URL serves big.bin (slowly, so it can be cancelled midway), a.bin and b.bin.
@main
struct Embedding {
    static func main() async throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 3 else {
            print("usage: Embedding BASE_URL DIRECTORY")
            return
        }
        let base = arguments[1], directory = arguments[2]

        // 1. A download with a progress line. Events arrive on the download's own thread, in order.
        var options = DownloadOptions()
        options.destination = .directory(directory)
        options.connections = .fixed(4)
        let downloader = Downloader(options: options)
        let first = try await downloader.download("\(base)/a.bin") { event in
            if case .progress(let progress) = event {
                print("a.bin: \(progress.receivedBytes) of \(progress.totalBytes ?? 0) bytes")
            }
        }
        print("1. saved \(first.path): \(first.bytes) bytes in \(first.elapsedSeconds) s")

        // 2. Cancel a download midway (here: once 4 MiB are in), then resume it. A cancelled
        // event stream ends by throwing an error of category .interrupted, after the partial
        // file is closed, so the same download can start again at once.
        let big = "\(base)/big.bin"
        let cancelled = Task {
            for try await event in downloader.events(for: big) {
                if case .progress(let progress) = event, progress.receivedBytes >= 4 << 20 {
                    withUnsafeCurrentTask { $0?.cancel() }
                }
            }
        }
        do {
            try await cancelled.value
            print("2. big.bin finished before it could be cancelled")
        } catch let error as DownloadError where error.category == .interrupted {
            print("2. cancelled: \(error.message)")
        }
        let resumed = try await downloader.download(big)
        print("2. resumed big.bin: \(resumed.resumedBytes) bytes were already there, \(resumed.transferredBytes) fetched")

        // 3. A batch: files from one list sharing one connection budget.
        let entries = try Manifest.parse("\(base)/a.bin\n\(base)/b.bin\n", source: "list")
        var batch = BatchOptions()
        batch.directory = directory + "/batch"
        batch.jobs = 2
        let summary = try await downloader.download(batch: entries, options: batch)
        print("3. batch: \(summary.count(.downloaded)) downloaded, \(summary.count(.failed)) failed")

        // 4. Failures are DownloadError values: a message for people, a category for programs.
        do {
            _ = try await downloader.download("\(base)/missing.bin")
        } catch {
            print("4. \(error.category): \(error.message)")
        }
    }
}
