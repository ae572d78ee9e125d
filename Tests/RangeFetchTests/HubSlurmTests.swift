import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// A fleet on a real scheduler: Debian's Slurm (slurmctld, slurmd and munge, started on this
/// machine by `Tests/Support/slurm_array.py` and stopped by pid) runs `sbatch --array=1-4`, each
/// task pulling its shard of one repository from our fake Hub into one shared cache, which
/// huggingface_hub then loads offline.
@Suite(.serialized)
final class HubSlurmTests {
    static let harness = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Support/slurm_array.py").path

    @Test func aSlurmArrayOfFourFillsOneCache() throws {
        let work = try TemporaryDirectory("rf-slurm")
        let files: [HubServer.File] = (0..<6).map { .large("weights/shard-\($0).safetensors", size: 400_000 + $0 * 1000) }
            + (0..<6).map { .small("config-\($0).json", "{\"part\": \($0)}\n") }
        let hub = try HubServer([.init(id: "org/fleet", branches: ["main": (HubDownloadTests.main, files)])], directory: work)
        let cache = work.file("shared-cache")
        let script = work.file("pull.sh")
        try """
            #!/bin/sh
            # One task of the array: shard K of N, K from 0 (Slurm numbers the tasks 1..N here).
            exec "$RANGEFETCH" hf://org/fleet --shard "$((SLURM_ARRAY_TASK_ID - 1))/$SLURM_ARRAY_TASK_COUNT" -q
            """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let slurm = work.file("slurm")
        try FileManager.default.createDirectory(atPath: slurm, withIntermediateDirectories: true)
        let result = try TestProcess.run("/usr/bin/python3", [Self.harness, "--work", slurm, "--array", "1-4", "--timeout", "180", "--", script],
                                         environment: ["RANGEFETCH": try TestProcess.rangefetchBinary, "HF_ENDPOINT": hub.hub,
                                                       "HF_HUB_CACHE": cache, "HF_HOME": work.file("hf-home"), "HF_TOKEN": ""],
                                         timeoutSeconds: 300)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let snapshot = cache + "/models--org--fleet/snapshots/\(HubDownloadTests.main)"
        for file in files {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: snapshot + "/" + file.path))
            #expect(Array(bytes) == HubServer.bytes(of: file), "\(file.path)")
        }
        let loaded = try HubDownloadTests.loadOffline("org/fleet", kind: "model", cache: cache)
        #expect(loaded.count == files.count)
        // Four tasks, each with its own share: every file was fetched once.
        let fetched = try hub.log().filter { ($0["path"] as? String ?? "").contains("/resolve/") && $0["method"] as? String == "GET" && $0["origin"] as? String == "hub" }
        #expect(fetched.count <= files.count, "\(fetched.count) GETs at the Hub for \(files.count) files")
    }
}
