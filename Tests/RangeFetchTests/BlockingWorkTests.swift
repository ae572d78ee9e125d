import Foundation
import Synchronization
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The work's thread is finished with before its result is handed back: whatever the work held is
/// released on it and its thread-exit handlers (OpenSSL frees its per-thread state in one) have
/// run, so a caller that then exits the process finds no thread still inside libcurl or OpenSSL.
/// Each release below is slow on purpose (50 ms, like closing TLS connections under load): handed
/// back first, the caller would see it unfinished.
struct BlockingWorkTests {
    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
        func set(_ on: Bool = true) { value.store(on, ordering: .sequentiallyConsistent) }
    }

    final class SlowToRelease: Sendable {
        let released: Flag
        init(_ released: Flag) { self.released = released }
        deinit {
            usleep(50_000)
            released.set()
        }
    }

    static let released = Flag()

    /// Work whose closure alone holds `held` (as a download's closure holds its handles).
    static func workHolding(_ held: SlowToRelease) -> @Sendable () throws(DownloadError) -> Int {
        { () throws(DownloadError) -> Int in withExtendedLifetime(held) { 7 } }
    }
    static let threadEnded = Flag()

    @Test func whatTheWorkHeldIsReleasedBeforeTheResultIsHandedBack() async throws {
        Self.released.set(false)
        let value = try await BlockingWork.run(cancellation: CancellationFlag(), Self.workHolding(SlowToRelease(Self.released)))
        #expect(value == 7)
        #expect(Self.released.isSet, "the work's captures were still alive")
    }

    @Test func theThreadsExitHandlersHaveRunWhenTheResultIsHandedBack() async throws {
        Self.threadEnded.set(false)
        var key = pthread_key_t()
        #expect(pthread_key_create(&key, { _ in
            usleep(50_000)
            BlockingWorkTests.threadEnded.set()
        }) == 0)
        let installed = key
        try await BlockingWork.run(cancellation: CancellationFlag()) { () throws(DownloadError) in
            pthread_setspecific(installed, UnsafeRawPointer(bitPattern: 1))
        }
        #expect(Self.threadEnded.isSet, "the work's thread was still ending")
        pthread_key_delete(key)
    }

    @Test func aFailureIsHandedBackTheSameWay() async {
        await #expect(throws: DownloadError.self) {
            try await BlockingWork.run(cancellation: CancellationFlag()) { () throws(DownloadError) -> Int in
                throw DownloadError(.invalidOption, "no")
            }
        }
    }

    /// A queue's transfers run at a lower CPU priority than the process's other threads (a
    /// daemon's answers): the work's thread alone is lowered, the caller's is not.
    @Test func nicenessLowersTheWorksThreadAlone() async throws {
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        let before = getpriority(which, 0)
        let inside = try await BlockingWork.run(cancellation: CancellationFlag(), niceness: 3) { () throws(DownloadError) -> Int32 in
            getpriority(which, 0)
        }
        #expect(inside == min(19, before + 3))
        #expect(getpriority(which, 0) == before)
        let plain = try await BlockingWork.run(cancellation: CancellationFlag()) { () throws(DownloadError) -> Int32 in
            getpriority(which, 0)
        }
        #expect(plain == before)
    }
}
