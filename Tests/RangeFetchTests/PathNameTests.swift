import Testing
@testable import RangeFetchBase

/// A path's directory and last component, found at its last slash byte by byte, as the kernel
/// reads a path.
struct PathNameTests {
    @Test(arguments: [
        ("a.bin", ".", "a.bin"),
        ("/a.bin", "/", "a.bin"),
        ("d/a.bin", "d", "a.bin"),
        ("/x/y/z.part", "/x/y", "z.part"),
        ("d/", "d", ""),
        ("/", "/", ""),
        ("", ".", ""),
        ("dé/日本😀.bin", "dé", "日本😀.bin"),
        // A combining mark after the slash makes one Character of both; the slash still separates.
        ("d/\u{301}x", "d", "\u{301}x"),
        ("a\u{301}/b", "a\u{301}", "b"),
    ])
    func namesSplitAtTheLastSlash(_ path: String, _ directory: String, _ base: String) {
        #expect(FileSystem.directoryName(of: path) == directory)
        #expect(FileSystem.baseName(of: path) == base)
        #expect(FileSystem.directoryName(of: path).utf8.elementsEqual(directory.utf8))
        #expect(FileSystem.baseName(of: path).utf8.elementsEqual(base.utf8))
    }
}
