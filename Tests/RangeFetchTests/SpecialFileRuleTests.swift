import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// When a FIFO or device at a user's output path may receive the download: the kernel's
/// protected_fifos rule, as a table.
struct SpecialFileRuleTests {
    @Test(arguments: [
        // (file owner, directory mode, directory owner, caller) -> may write
        (65534, 0o1777, 0, 0, false),      // another user's FIFO in /tmp
        (0, 0o1777, 0, 0, true),           // our own FIFO in /tmp
        (0, 0o1777, 0, 1000, true),        // the directory owner's (root's device in root's /dev/shm, for anyone)
        (65534, 0o0755, 0, 0, true),       // /dev/null-like: an ordinary directory
        (65534, 0o0777, 0, 0, true),       // world-writable but not sticky: they could replace the file itself
        (65534, 0o1775, 0, 0, true),       // sticky, not world-writable (a group's directory)
        (1000, 0o1777, 65534, 0, false),   // neither ours nor the directory owner's
    ] as [(uid_t, mode_t, uid_t, uid_t, Bool)])
    func mayWrite(owner: uid_t, directoryMode: mode_t, directoryOwner: uid_t, caller: uid_t, expected: Bool) {
        #expect(SpecialFileRule.mayWrite(owner: owner, directoryMode: S_IFDIR | directoryMode,
                                         directoryOwner: directoryOwner, caller: caller) == expected)
    }

    @Test func namesTheKindOfFile() {
        #expect(SpecialFileRule.kindName(S_IFIFO | 0o644) == "a FIFO")
        #expect(SpecialFileRule.kindName(S_IFCHR | 0o666) == "a character device")
        #expect(SpecialFileRule.kindName(S_IFBLK | 0o660) == "a block device")
    }
}
