import Foundation
import Testing

/// The fleet examples in docs/examples, run as their schedulers would run them: every Slurm array
/// task, or every pod index of the Kubernetes Indexed Job, as a process on this machine at once.
/// Together they must fetch exactly the list, each file once.
@Suite(.serialized)
final class FleetExampleTests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let nginx: NginxServer
    let names = (1...30).map { "fleet-\($0).bin" }
    let list: String

    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/examples").path

    init() throws {
        (www, out, nginx) = try NginxServer.withScratchDirectories()
        for name in names { try www.randomFile(name, size: 24 << 10) }
        list = www.file("list.txt")
        try names.map { "\(nginx.baseURL)/\($0)" }.joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
    }

    private var binaryDirectory: String {
        get throws { (try TestProcess.rangefetchBinary as NSString).deletingLastPathComponent }
    }

    /// Runs `count` copies of a shell command at once, each with its own environment.
    private func runAll(_ count: Int, shell: String, arguments: [String], environment: (Int) throws -> [String: String]) throws {
        let environments = try (0..<count).map(environment)
        let results = Locked([Int32](repeating: -1, count: count))
        let errors = Locked([String](repeating: "", count: count))
        DispatchQueue.concurrentPerform(iterations: count) { index in
            guard let result = try? TestProcess.run(shell, arguments, environment: environments[index]) else { return }
            results.withLock { $0[index] = result.status }
            errors.withLock { $0[index] = result.stderr }
        }
        #expect(results.current.allSatisfy { $0 == 0 }, "\(results.current) \(errors.current)")
    }

    private func expectEveryFileOnce() throws {
        for name in names {
            #expect(try Checksums.sha256sum(out.file(name)) == Checksums.sha256sum(www.file(name)), "\(name)")
        }
        let gets = nginx.accessLog().filter { $0.method == "GET" }.map(\.path)
        #expect(gets.count == names.count, "\(gets.count) GETs for \(names.count) files")
        #expect(Set(gets) == Set(names.map { "/" + $0 }))
    }

    @Test func slurmArrayTasksTogetherFetchTheListOnce() throws {
        let script = Self.examples + "/slurm-array.sbatch"
        let tasks = 4
        try runAll(tasks, shell: "/bin/bash", arguments: [script]) { index in
            ["SLURM_ARRAY_TASK_ID": "\(index + 10)", "SLURM_ARRAY_TASK_MIN": "10", "SLURM_ARRAY_TASK_COUNT": "\(tasks)",
             "MANIFEST": self.list, "OUT_DIR": self.out.path, "PATH": try self.binaryDirectory + ":/usr/bin:/bin"]
        }
        try expectEveryFileOnce()
    }

    @Test func kubernetesIndexedJobPodsTogetherFetchTheListOnce() throws {
        let yaml = try String(contentsOfFile: Self.examples + "/k8s-indexed-job.yaml", encoding: .utf8)
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        func value(after key: String) -> String? {
            lines.first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(key) }
                .map { $0.components(separatedBy: key)[1].components(separatedBy: "#")[0].trimmingCharacters(in: .whitespaces) }
        }
        let completions = try #require(value(after: "completions:").flatMap { Int($0) })
        let shardsLine = try #require(lines.firstIndex { $0.contains("name: SHARDS") })
        #expect(lines[shardsLine + 1].contains("value: \"\(completions)\""), "SHARDS must equal completions")
        // The container's script: the indented block under `- |` after `args:`.
        let start = try #require(lines.firstIndex { $0.trimmingCharacters(in: .whitespaces) == "- |" })
        let indent = lines[start + 1].prefix { $0 == " " }.count
        let script = lines[(start + 1)...].prefix { $0.prefix(indent).allSatisfy { $0 == " " } && $0.count > indent }
            .map { String($0.dropFirst(indent)) }.joined(separator: "\n")
        #expect(script.contains("--shard \"$JOB_COMPLETION_INDEX/$SHARDS\""))
        try runAll(completions, shell: "/bin/sh", arguments: ["-c", script]) { index in
            ["JOB_COMPLETION_INDEX": "\(index)", "SHARDS": "\(completions)", "MANIFEST": self.list,
             "OUT_DIR": self.out.path, "PATH": try self.binaryDirectory + ":/usr/bin:/bin"]
        }
        try expectEveryFileOnce()
    }
}
