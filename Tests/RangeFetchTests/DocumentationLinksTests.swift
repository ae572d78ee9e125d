import Foundation
import Testing

/// The README is a front page that links the reference pages under docs/: every relative link of
/// those pages (and of the DocC articles) must name a file that exists and, after `#`, a heading
/// it has, so moving a section cannot leave a dead link. The README keeps its two commands and
/// stays a page, not the manual; the docs' examples never write to a predictable name in /tmp.
@Suite struct DocumentationLinksTests {
    static var pages: [String] {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: SchemaValidation.repository + "/docs")) ?? []
        let catalog = "Sources/RangeFetch/RangeFetch.docc"
        let articles = (try? FileManager.default.contentsOfDirectory(atPath: SchemaValidation.repository + "/" + catalog)) ?? []
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
            + articles.filter { $0.hasSuffix(".md") }.sorted().map { catalog + "/" + $0 }
    }

    /// GitHub's anchor for a heading: lower-cased, only letters, digits, `_`, `-` and spaces
    /// kept, spaces turned into `-`.
    static func anchor(_ heading: String) -> String {
        let kept = heading.lowercased().unicodeScalars.filter {
            CharacterSet.alphanumerics.contains($0) || $0 == "_" || $0 == "-" || $0 == " "
        }
        return String(String.UnicodeScalarView(kept)).replacingOccurrences(of: " ", with: "-")
    }

    /// The page's text outside fenced code blocks.
    static func prose(_ text: String) -> [Substring] {
        var inFence = false
        return text.split(separator: "\n", omittingEmptySubsequences: false).filter { line in
            if line.hasPrefix("```") { inFence.toggle(); return false }
            return !inFence
        }
    }

    static func anchors(ofPageAt path: String) throws -> Set<String> {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var result = Set<String>()
        for line in prose(text) where line.hasPrefix("#") {
            let heading = line.drop(while: { $0 == "#" })
            guard heading.first == " " else { continue }
            result.insert(anchor(String(heading.dropFirst())))
        }
        return result
    }

    @Test func anchorsAreGitHubs() {
        #expect(Self.anchor("Metalink: a .meta4 file") == "metalink-a-meta4-file")
        #expect(Self.anchor("The bar's connection count: `64/32 conns`") == "the-bars-connection-count-6432-conns")
        #expect(Self.anchor("Object stores: s3://") == "object-stores-s3")
    }

    @Test(arguments: pages)
    func everyRelativeLinkNamesAFileAndAHeadingThatExist(page: String) throws {
        let root = SchemaValidation.repository
        let text = try String(contentsOfFile: root + "/" + page, encoding: .utf8)
        let link = /\]\(([^)\s]+)\)/
        let directory = (page as NSString).deletingLastPathComponent
        var checked = 0
        for line in Self.prose(text) {
            for match in line.matches(of: link) {
                let target = String(match.1)
                if target.contains("://") || target.hasPrefix("mailto:") || target.hasPrefix("doc:") { continue }
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let file = parts[0].isEmpty ? page : ((directory as NSString).appendingPathComponent(String(parts[0])) as NSString).standardizingPath
                let path = root + "/" + file
                #expect(FileManager.default.fileExists(atPath: path), "\(page): \(target) names no file")
                if parts.count == 2, file.hasSuffix(".md"), FileManager.default.fileExists(atPath: path) {
                    #expect(try Self.anchors(ofPageAt: path).contains(String(parts[1])), "\(page): \(target) names no heading")
                }
                checked += 1
            }
        }
        if page == "README.md" { #expect(checked >= 10) }
    }

    /// A fence left open (a section cut one line short when moved) swallows the page after it.
    @Test(arguments: pages)
    func everyCodeFenceIsClosed(page: String) throws {
        let text = try String(contentsOfFile: SchemaValidation.repository + "/" + page, encoding: .utf8)
        let fences = text.split(separator: "\n").filter { $0.drop(while: { $0 == " " }).hasPrefix("```") }
        #expect(fences.count % 2 == 0, "\(page) has \(fences.count) code fences")
    }

    @Test func readmeIsAFrontPageWithTheTwoCommands() throws {
        let readme = try String(contentsOfFile: SchemaValidation.repository + "/README.md", encoding: .utf8)
        #expect(readme.utf8.count < 16_384, "the README is \(readme.utf8.count) bytes: move reference into docs/")
        #expect(readme.contains("scripts/run.sh [URL [options]]   # installs what is missing, builds, downloads URL;"))
        #expect(readme.contains("scripts/test.sh                  # installs what is missing, builds, runs every test"))
        for page in ["docs/usage.md", "docs/safety.md", "docs/sources.md", "docs/batch.md", "docs/benchmarks.md", "docs/CHANGES.md"] {
            #expect(readme.contains("](\(page))"), "the README does not link \(page)")
        }
    }

    /// A predictable name in a shared sticky directory can be taken first by another user (a FIFO,
    /// a link): the examples write into directories of the user's own.
    @Test(arguments: pages)
    func examplesWriteNoPredictableNameInTmp(page: String) throws {
        let text = try String(contentsOfFile: SchemaValidation.repository + "/" + page, encoding: .utf8)
        #expect(!text.contains(/-o\s+"?\/tmp\//), "\(page) writes -o /tmp/NAME")
        #expect(!text.contains(/sbcast[^\n]*\s\/tmp\//), "\(page) copies to /tmp/NAME")
    }
}
