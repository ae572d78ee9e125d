import CCurl
import Dispatch
import Synchronization
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``CurlLoop``: requests end under their tokens and leave the loop; a request libcurl refuses
/// to configure never starts; cancellation ends a single request; a loop that goes takes its
/// requests out of libcurl with it.
@Suite(.serialized)
final class CurlLoopTests {
    let server: FaultServer

    init() throws {
        server = try FaultServer()
    }

    deinit { server.stop() }

    /// A HEAD request for a small file of the fault server.
    private func headRequest() throws -> CurlEasy {
        let easy = try CurlEasy()
        easy.set(CURLOPT_URL, server.dataURL(size: 1000))
        easy.set(CURLOPT_NOBODY, true)
        return easy
    }

    /// Collects the ends the loop reports; done once `expected` have ended.
    private final class Collector: CurlLoopClient {
        let expected: Int
        var ends: [Int: CURLcode] = [:]
        var rounds = 0
        init(expected: Int) { self.expected = expected }

        func afterTransfers(finished: [CurlLoop.Finished], now: Double) -> CurlLoop.Next {
            rounds += 1
            for end in finished { ends[end.token] = end.result }
            return ends.count == expected ? .done : .wait(milliseconds: 100)
        }
    }

    @Test func requestsEndUnderTheirTokensAndLeaveTheLoop() throws {
        let loop = try CurlLoop()
        let first = try headRequest(), second = try headRequest()
        try loop.add(first, token: 7)
        try loop.add(second, token: 9)
        #expect(loop.requestCount == 2)
        let collector = Collector(expected: 2)
        try loop.run(collector, cancellation: CancellationFlag())
        #expect(collector.ends == [7: CURLE_OK, 9: CURLE_OK])
        #expect(loop.requestCount == 0)
        #expect(first.responseCode == 200 && second.responseCode == 200)
        // An ended request is out of libcurl's multi handle: it can run again.
        #expect(try loop.perform(first, cancellation: CancellationFlag()) == CURLE_OK)
    }

    @Test func aRefusedOptionStopsTheRequestWithAnError() throws {
        let loop = try CurlLoop()
        let easy = try headRequest()
        easy.set(CURLoption(rawValue: 99_999), 1)
        easy.set(CURLOPT_NOBODY, true)  // later options still set; the first refusal is kept
        let error = #expect(throws: DownloadError.self) { try loop.add(easy, token: 1) }
        #expect(error?.message.contains("libcurl refused request option 99999") == true, "\(error?.message ?? "")")
        #expect(loop.requestCount == 0)
    }

    @Test func aCancelledSingleRequestEndsAsAborted() throws {
        let loop = try CurlLoop()
        let cancellation = CancellationFlag()
        cancellation.cancel()
        let easy = try headRequest()
        #expect(try loop.perform(easy, cancellation: cancellation) == CURLE_ABORTED_BY_CALLBACK)
        #expect(loop.requestCount == 0)
    }

    /// libcurl refuses to add a handle that is still in another multi handle: the second loop
    /// taking it proves the first removed it when it went.
    @Test func aLoopThatGoesTakesItsRequestsOutOfLibcurl() throws {
        let easy = try headRequest()
        do {
            let loop = try CurlLoop()
            try loop.add(easy, token: 1)
            #expect(loop.requestCount == 1)
        }
        let next = try CurlLoop()
        #expect(try next.perform(easy, cancellation: CancellationFlag()) == CURLE_OK)
    }

    /// Idle connections close with their handle; the loop goes on with a new one, while another
    /// thread keeps waking it (a wakeup never reaches a handle that is gone: AddressSanitizer
    /// and the run itself would say so).
    @Test func idleConnectionsCloseWhileOtherThreadsWakeTheLoop() throws {
        let loop = try CurlLoop()
        let stop = Atomic(false)
        let waker = DispatchGroup()
        DispatchQueue.global().async(group: waker) {
            while !stop.load(ordering: .relaxed) { loop.wakeup() }
        }
        defer {
            stop.store(true, ordering: .relaxed)
            waker.wait()
        }
        for _ in 0..<50 {
            #expect(try loop.perform(try headRequest(), cancellation: CancellationFlag()) == CURLE_OK)
            #expect(loop.openConnections == 1)
            #expect(loop.closeIdleConnections())
            #expect(loop.openConnections == 0)
        }
        // Not while a request is in the loop.
        try loop.add(try headRequest(), token: 1)
        #expect(!loop.closeIdleConnections())
        #expect(loop.requestCount == 1)
    }
}
