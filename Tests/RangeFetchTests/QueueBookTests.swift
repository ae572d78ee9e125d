import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``QueueBook`` as tables: operations in, actions and statuses out, no thread or file.
struct QueueBookTests {
    typealias Action = QueueBook.Action

    /// A book with `count` downloads added, ids 1…count, `maximumActive` running.
    static func book(_ count: Int, maximumActive: Int) -> (QueueBook, [DownloadID]) {
        var book = QueueBook(maximumActive: maximumActive)
        let ids = (0..<count).map { _ in book.add().0 }
        return (book, ids)
    }

    static func statuses(_ book: QueueBook, _ ids: [DownloadID]) -> [QueueStatus?] { ids.map { book.status($0) } }

    @Test func addingStartsDownloadsUntilTheLimit() {
        var book = QueueBook(maximumActive: 2)
        let started = (0..<3).map { _ in book.add() }
        #expect(started.map(\.1) == [[.start(DownloadID(1))], [.start(DownloadID(2))], []])
        #expect(Self.statuses(book, started.map(\.0)) == [.active, .active, .waiting])
        let (paused, actions) = book.add(paused: true, at: 0)
        #expect(actions.isEmpty && book.status(paused) == .paused && book.order.first == paused)
    }

    /// Pausing a running download asks it to stop; it counts as running (and "active") until it
    /// has ended, so the next one starts only then, and it is paused only then.
    @Test func aPauseLandsWhenTheDownloadHasEnded() throws {
        var (book, ids) = Self.book(2, maximumActive: 1)
        #expect(try book.pause(ids[0]) == [.stop(ids[0])])
        #expect(try book.pause(ids[0]) == [], "a second pause asks nothing more")
        #expect(Self.statuses(book, ids) == [.active, .waiting])
        #expect(book.ended(ids[0], .stopped) == [.start(ids[1])])
        #expect(Self.statuses(book, ids) == [.paused, .active])
        #expect(try book.resume(ids[0]) == [], "no room: it waits")
        #expect(book.status(ids[0]) == .waiting)
        #expect(book.ended(ids[1], .finished) == [.start(ids[0])])
        #expect(Self.statuses(book, ids) == [.active, .complete])
    }

    struct EndCase: CustomTestStringConvertible, Sendable {
        var name: String
        var operation: @Sendable (inout QueueBook, DownloadID) throws -> [Action]
        var end: QueueBook.End
        var status: QueueStatus?
        var actions: @Sendable (DownloadID) -> [Action]
        var testDescription: String { name }
    }

    /// What a running download becomes when it ends, by why it was stopped and how it ended.
    static let endCases: [EndCase] = [
        EndCase(name: "paused, stopped: paused", operation: { try $0.pause($1) }, end: .stopped, status: .paused, actions: { _ in [] }),
        EndCase(name: "paused, but it finished first: complete", operation: { try $0.pause($1) }, end: .finished, status: .complete,
                actions: { _ in [] }),
        EndCase(name: "paused, but it failed first: failed", operation: { try $0.pause($1) }, end: .failed, status: .failed,
                actions: { _ in [] }),
        EndCase(name: "paused then resumed before it stopped: waits and starts again", operation: {
            _ = try $0.pause($1)
            return try $0.resume($1)
        }, end: .stopped, status: .active, actions: { [.start($0)] }),
        EndCase(name: "removed, stopped: forgotten, files discarded", operation: { try $0.remove($1) }, end: .stopped, status: nil,
                actions: { [.discard($0)] }),
        EndCase(name: "removed keeping files: forgotten, nothing discarded", operation: { try $0.remove($1, keepingFiles: true) },
                end: .stopped, status: nil, actions: { _ in [] }),
        EndCase(name: "removed, but it finished first: complete, file kept", operation: { try $0.remove($1) }, end: .finished,
                status: .complete, actions: { _ in [] }),
        EndCase(name: "stopped unasked (the process stopping): paused", operation: { _, _ in [] }, end: .stopped, status: .paused,
                actions: { _ in [] }),
        EndCase(name: "failed: failed", operation: { _, _ in [] }, end: .failed, status: .failed, actions: { _ in [] }),
    ]

    @Test(arguments: endCases)
    func aRunningDownloadEnds(_ test: EndCase) throws {
        var (book, ids) = Self.book(1, maximumActive: 1)
        _ = try test.operation(&book, ids[0])
        #expect(book.ended(ids[0], test.end) == test.actions(ids[0]))
        #expect(book.status(ids[0]) == test.status)
    }

    struct RefusalCase: CustomTestStringConvertible, Sendable {
        var name: String
        var operation: @Sendable (inout QueueBook, DownloadID) throws(QueueError) -> [Action]
        var message: String
        var testDescription: String { name }
    }

    /// Operations that make no sense are refused with a message naming the download.
    static let refusals: [RefusalCase] = [
        RefusalCase(name: "pause a complete download", operation: { (book, id) throws(QueueError) in try book.pause(id) },
                    message: "download #1 is complete; only a waiting or active download can be paused"),
        RefusalCase(name: "resume a complete download", operation: { (book, id) throws(QueueError) in try book.resume(id) },
                    message: "download #1 is complete; there is nothing to resume"),
        RefusalCase(name: "move a complete download", operation: { (book, id) throws(QueueError) in try book.move(id, to: 0) },
                    message: "download #1 is complete; only an unfinished download can be moved"),
        RefusalCase(name: "anything on an unknown id", operation: { (book, _) throws(QueueError) in try book.pause(DownloadID(9)) },
                    message: "download #9 is not in the queue"),
    ]

    @Test(arguments: refusals)
    func refused(_ test: RefusalCase) {
        var (book, ids) = Self.book(1, maximumActive: 1)
        _ = book.ended(ids[0], .finished)
        #expect(throws: QueueError.self) { _ = try test.operation(&book, ids[0]) }
        do {
            _ = try test.operation(&book, ids[0])
        } catch {
            #expect(error.message == test.message)
        }
    }

    @Test func aRemovedWaitingDownloadIsForgottenAndItsFilesDiscarded() throws {
        var (book, ids) = Self.book(3, maximumActive: 1)
        #expect(try book.remove(ids[1]) == [.discard(ids[1])])
        #expect(book.order == [ids[0], ids[2]] && book.status(ids[1]) == nil)
        #expect(throws: QueueError.self) { _ = try book.resume(ids[1]) }
        #expect(try book.remove(ids[2], keepingFiles: true) == [])
    }

    @Test func movingAWaitingDownloadFirstStartsItNext() throws {
        var (book, ids) = Self.book(3, maximumActive: 1)
        #expect(try book.move(ids[2], to: 0) == [])
        #expect(book.order == [ids[2], ids[0], ids[1]])
        #expect(book.ended(ids[0], .finished) == [.start(ids[2])])
    }

    /// Raising the limit starts waiting downloads at once; lowering it stops the last running
    /// ones in queue order, which wait again, still counted as running until they have ended.
    @Test func theLimitChangedLiveTakesEffectAtOnce() throws {
        var (book, ids) = Self.book(4, maximumActive: 1)
        #expect(book.setMaximumActive(3) == [.start(ids[1]), .start(ids[2])])
        #expect(book.setMaximumActive(1) == [.stop(ids[1]), .stop(ids[2])])
        #expect(book.active == [ids[0], ids[1], ids[2]])
        #expect(book.ended(ids[2], .stopped) == [])
        #expect(book.status(ids[2]) == .waiting)
        #expect(book.ended(ids[1], .stopped) == [])
        #expect(book.ended(ids[0], .finished) == [.start(ids[1])], "the first waiting in order starts")
        #expect(book.setMaximumActive(0) == [], "at least one runs")
        #expect(book.maximumActive == 1)
    }

    @Test func aFailedDownloadCanBeTriedAgain() throws {
        var (book, ids) = Self.book(1, maximumActive: 1)
        _ = book.ended(ids[0], .failed)
        #expect(try book.resume(ids[0]) == [.start(ids[0])])
    }
}
