import Foundation
import Testing

/// docs/architecture.md's table of targets is what Package.swift says: every Swift target has a
/// row, each row's "may use" names exactly the package's own targets it depends on, and its rooms
/// are the folders under `Sources/<target>/`. The walls themselves are the compiler's to check.
@Suite struct ArchitectureTableTests {
    struct Row: Equatable {
        var rooms: Set<String>
        var uses: Set<String>
    }

    static let root = SchemaValidation.repository

    /// The names written in backticks in a table cell.
    static func quoted(_ cell: Substring) -> [String] {
        cell.matches(of: /`([^`]+)`/).map { String($0.output.1) }
    }

    /// The table under "## The targets": target name → its rooms (folders) and what it may use.
    static func documented() throws -> [String: Row] {
        let text = try String(contentsOfFile: root + "/docs/architecture.md", encoding: .utf8)
        var rows: [String: Row] = [:]
        var inSection = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("## ") { inSection = line == "## The targets"; continue }
            guard inSection, line.hasPrefix("| `") else { continue }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst()
            guard cells.count >= 3, let name = quoted(cells[cells.startIndex]).first else { continue }
            let rooms = quoted(cells[cells.startIndex + 1]).filter { $0.hasSuffix("/") }.map { String($0.dropLast()) }
            rows[name] = Row(rooms: Set(rooms), uses: Set(quoted(cells[cells.startIndex + 2])))
        }
        return rows
    }

    /// The package's own targets each target depends on (products of other packages left out),
    /// read from Package.swift's text: `swift package dump-package` would wait for the build
    /// directory's lock that the running tests hold.
    static func declared() throws -> [String: Set<String>] {
        let manifest = try String(contentsOfFile: root + "/Package.swift", encoding: .utf8)
        var result: [String: Set<String>] = [:]
        for match in manifest.matches(of: /\.(?:target|executableTarget)\(\s*name: "(\w+)"/) {
            let name = String(match.output.1)
            var depth = 0
            var end = match.range.upperBound
            // The target's own parentheses: from `.target(` to its closing one.
            for index in manifest[match.range.lowerBound...].indices {
                let character = manifest[index]
                if character == "(" { depth += 1 }
                if character == ")" { depth -= 1; if depth == 0 { end = index; break } }
            }
            let body = manifest[match.range.lowerBound..<end]
            guard let list = body.firstMatch(of: /dependencies: \[([^\]]*)\]/) else { result[name] = []; continue }
            let own = String(list.output.1).replacing(/\.product\([^)]*\)/, with: "")
            result[name] = Set(own.matches(of: /"(\w+)"/).map { String($0.output.1) })
        }
        return result
    }

    /// The folders under `Sources/<target>/` that hold Swift files (a DocC catalogue is not a room).
    static func folders(of target: String) -> Set<String> {
        let base = root + "/Sources/" + target
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        return Set(entries.filter { entry in
            var isDirectory: ObjCBool = false
            guard !entry.hasSuffix(".docc"), FileManager.default.fileExists(atPath: base + "/" + entry, isDirectory: &isDirectory),
                  isDirectory.boolValue else { return false }
            let files = FileManager.default.enumerator(atPath: base + "/" + entry)?.allObjects as? [String] ?? []
            return files.contains { $0.hasSuffix(".swift") }
        })
    }

    @Test func everySwiftTargetHasARowThatSaysWhatItMayUse() throws {
        let rows = try Self.documented()
        let targets = try Self.declared()
        let swiftTargets = targets.keys.filter { name in
            let files = FileManager.default.enumerator(atPath: Self.root + "/Sources/" + name)?.allObjects as? [String] ?? []
            return files.contains { $0.hasSuffix(".swift") }
        }
        #expect(swiftTargets.count >= 5, "\(targets.keys.sorted())")
        #expect(Set(rows.keys) == Set(swiftTargets), "table: \(rows.keys.sorted()), Package.swift: \(swiftTargets.sorted())")
        for name in swiftTargets {
            let row = try #require(rows[name], "no row for \(name)")
            #expect(row.uses == targets[name], "\(name): the table says \(row.uses.sorted()), Package.swift \(targets[name, default: []].sorted())")
            if !row.rooms.isEmpty {
                #expect(row.rooms == Self.folders(of: name), "\(name): the table's rooms \(row.rooms.sorted()), the folders \(Self.folders(of: name).sorted())")
            }
        }
    }

    @Test func theLibrarysTargetsAreLayeredWithNoWayBack() throws {
        let targets = try Self.declared()
        #expect(targets["RangeFetchBase"]?.contains { $0.hasPrefix("RangeFetch") } == false)
        #expect(targets["RangeFetchNetwork"]?.contains("RangeFetchBase") == true)
        #expect(targets["RangeFetchNetwork"]?.contains("RangeFetch") == false)
        #expect(targets["RangeFetch"]?.isSuperset(of: ["RangeFetchBase", "RangeFetchNetwork"]) == true)
    }
}
