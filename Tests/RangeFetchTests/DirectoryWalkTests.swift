import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Walking a directory's path one component at a time: our own links (relative, absolute,
/// chained) are followed, missing directories made with `creating`, a loop and a file on the
/// way are errors naming the component. (Another user's link: ``SharedDirectoryTests``.)
struct DirectoryWalkTests {
    let root: TemporaryDirectory

    init() throws {
        root = try TemporaryDirectory("rf-walk")
    }

    /// The directory `descriptor` is open on, by device and inode.
    private func identity(_ descriptor: Int32) -> [UInt64] {
        var info = stat()
        fstat(descriptor, &info)
        return [UInt64(info.st_dev), UInt64(info.st_ino)]
    }

    private func identity(_ path: String) -> [UInt64] {
        var info = stat()
        stat(path, &info)
        return [UInt64(info.st_dev), UInt64(info.st_ino)]
    }

    @Test func followsOurOwnLinksRelativeAbsoluteAndChained() throws {
        try FileManager.default.createDirectory(atPath: root.file("real/deep"), withIntermediateDirectories: true)
        #expect(symlink("real", root.file("relative")) == 0)
        #expect(symlink(root.file("relative"), root.file("absolute")) == 0)
        for path in [root.file("real/deep"), root.file("relative/deep"), root.file("absolute/deep"), root.file("absolute/./deep/../deep")] {
            let descriptor = try DirectoryWalk.open(path)
            defer { close(descriptor) }
            #expect(identity(descriptor) == identity(root.file("real/deep")), "\(path)")
        }
    }

    @Test func createsMissingDirectoriesOnlyWhenAsked() throws {
        let path = root.file("relative/a/b")
        #expect(symlink("real", root.file("relative")) == 0)
        #expect(mkdir(root.file("real"), 0o755) == 0)
        #expect(throws: SystemCallError.self) { try DirectoryWalk.open(path) }
        close(try DirectoryWalk.open(path, creating: true))
        #expect(FileSystem.kind(of: root.file("real/a/b"), followingLinks: false) == .directory)
    }

    @Test func aLoopAndAFileOnTheWayAreErrorsNamingTheComponent() throws {
        #expect(symlink("loop-b", root.file("loop-a")) == 0)
        #expect(symlink("loop-a", root.file("loop-b")) == 0)
        let loop = #expect(throws: SystemCallError.self) { try DirectoryWalk.open(root.file("loop-a/x")) }
        #expect(loop?.errno == ELOOP)
        #expect(FileManager.default.createFile(atPath: root.file("file"), contents: Data("x".utf8)))
        let file = #expect(throws: SystemCallError.self) { try DirectoryWalk.open(root.file("file/x"), creating: true) }
        #expect(file?.errno == ENOTDIR)
        #expect(file?.path == root.file("file"))
    }

    @Test func splitsAPathIntoItsNames() {
        #expect(DirectoryWalk.components("/a//b/./c/") == ["a", "b", "c"])
        #expect(DirectoryWalk.components("a/../b") == ["a", "..", "b"])
        #expect(DirectoryWalk.components(".").isEmpty)
    }
}
