import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// The bench sweep's pure parts: slicing, the early stop, the knee and the verdict.
struct BenchPlanTests {
    @Test(arguments: [(Int64(1), 1), (1, 8), (3, 8), (1000, 3), (1 << 30, 32), (7, 7), (8, 7)])
    func slicesCoverTheBudgetExactlyWithDistinctRanges(budget: Int64, connections: Int) {
        let slices = BenchPlan.slices(budget: budget, connections: connections)
        #expect(slices.count == min(connections, Int(budget)))
        #expect(slices.first?.lower == 0)
        #expect(slices.last?.upper == budget)
        for (previous, next) in zip(slices, slices.dropFirst()) { #expect(previous.upper == next.lower) }
        #expect(slices.allSatisfy { !$0.isEmpty })
        #expect(slices.reduce(0) { $0 + $1.count } == budget)
    }

    @Test func budgetNeverExceedsTheFile() {
        var plan = BenchPlan()
        #expect(plan.budgetBytes(fileSize: 100) == 100)
        plan.maximumBytes = 1000
        #expect(plan.budgetBytes(fileSize: 100) == 100)
        #expect(plan.budgetBytes(fileSize: 5000) == 1000)
        #expect(plan.budgetBytes(fileSize: nil) == 1000)
        plan.maximumBytes = nil
        #expect(plan.budgetBytes(fileSize: nil) == nil)
    }

    @Test func sweepStopsOnceAStepAddsLessThanFivePercent() {
        let plan = BenchPlan()
        #expect(plan.shouldContinue(afterMedians: [100]))
        #expect(plan.shouldContinue(afterMedians: [100, 200]))
        #expect(!plan.shouldContinue(afterMedians: [100, 200, 204]))
        #expect(!plan.shouldContinue(afterMedians: [100, 90]))
        var full = plan
        full.stopWhenFlat = false
        #expect(full.shouldContinue(afterMedians: [100, 90]))
    }

    @Test func planProblemsAreNamed() {
        var plan = BenchPlan()
        #expect(plan.problem() == nil)
        plan.connectionCounts = [4, 2]
        #expect(plan.problem()?.contains("ascending") == true)
        plan.connectionCounts = [0, 2]
        #expect(plan.problem()?.contains("between 1 and 64") == true)
        plan.connectionCounts = [1]
        plan.runs = 0
        #expect(plan.problem()?.contains("runs") == true)
    }

    /// A step whose every run moved `rate` bytes per second, `cpu` CPU seconds per second.
    static func step(_ connections: Int, _ rate: Double, cpu: Double = 0.1) -> BenchStep {
        BenchStep(connections: connections, samples: [
            BenchSample(connections: connections, bytes: Int64(rate), seconds: 1,
                        connectionBytesPerSecond: Array(repeating: rate / Double(connections), count: connections),
                        timeToFirstByteSeconds: 0.001, connectSeconds: 0.0001, cpuSeconds: cpu, retries: 0),
        ])
    }

    /// A step whose runs had `pushbacks` requests refused with `status` out of `requests`.
    static func refused(_ step: BenchStep, _ pushbacks: Int, of requests: Int, status: Int = 503, admitted: Int? = nil) -> BenchStep {
        var step = step
        step.samples[0].admittedConnections = admitted ?? step.connections
        step.samples[0].pushbacks = pushbacks
        step.samples[0].requests = requests
        step.samples[0].pushbackStatus = pushbacks > 0 ? status : nil
        return step
    }

    @Test func refusalsFromSomeCountOnNameTheServersLimit() {
        let steps = [Self.step(1, 25e6), Self.step(2, 50e6), Self.step(4, 100e6), Self.step(8, 200e6),
                     Self.refused(Self.step(16, 205e6), 8, of: 24, admitted: 8)]
        let verdict = BenchVerdict(steps: steps)
        #expect(verdict.limit == .connectionLimit)
        #expect(verdict.summary.hasPrefix("the server refuses more than 8 connections (HTTP 503)"), "\(verdict.summary)")
        #expect(verdict.recommendedConnections == 8)
        let tooMany = BenchVerdict(steps: [Self.step(1, 25e6), Self.step(2, 50e6), Self.refused(Self.step(4, 90e6), 2, of: 6, status: 429, admitted: 2),
                                           Self.refused(Self.step(8, 100e6), 6, of: 14, status: 429, admitted: 2)])
        #expect(tooMany.limit == .connectionLimit && tooMany.summary.contains("more than 2 connections (HTTP 429)"), "\(tooMany.summary)")
        #expect(tooMany.recommendedConnections == 2)
        // Slots held a moment by the step before (refused at 8, all 8 admitted once asked again):
        // the limit is the most admitted, 8, not the clean step's 4.
        let stale = BenchVerdict(steps: [Self.step(4, 15e6), Self.refused(Self.step(8, 23e6), 4, of: 12, admitted: 8),
                                         Self.refused(Self.step(16, 21e6), 21, of: 37, admitted: 8)])
        #expect(stale.summary.hasPrefix("the server refuses more than 8 connections (HTTP 503): at 16"), "\(stale.summary)")
    }

    /// Refused requests that were all admitted once asked again are pushback, not a limit.
    @Test func refusalsEveryRequestSurvivesArePushback() {
        let verdict = BenchVerdict(steps: [Self.step(1, 10e6), Self.refused(Self.step(2, 20e6), 4, of: 10, admitted: 2),
                                           Self.refused(Self.step(4, 40e6), 3, of: 15, admitted: 4)])
        #expect(verdict.limit == .pushback, "\(verdict.summary)")
    }

    @Test(arguments: [[3, 5, 9], [0, 4, 0]])
    func refusalsNotTiedToACountArePushback(refusals: [Int]) {
        let steps = zip([1, 2, 4], refusals).map { Self.refused(Self.step($0, Double($0) * 10e6), $1, of: $0 * 3 + $1) }
        let verdict = BenchVerdict(steps: steps)
        #expect(verdict.limit == .pushback)
        #expect(verdict.summary.contains("HTTP 503 to \(refusals.reduce(0, +)) of"), "\(verdict.summary)")
        #expect(verdict.summary.contains("at every count") == !refusals.contains(0))
    }

    @Test func cappedConnectionsGiveAKneeAtTheCeiling() {
        let steps = [Self.step(1, 25e6), Self.step(2, 50e6), Self.step(4, 100e6), Self.step(8, 200e6),
                     Self.step(16, 390e6), Self.step(32, 400e6)]
        let verdict = BenchVerdict(steps: steps)
        #expect(verdict.recommendedConnections == 16)
        #expect(verdict.best.connections == 32)
        #expect(verdict.limit == .perConnectionCap)
        #expect(verdict.summary.contains("beyond 16"))
    }

    /// A 400 MB/s path behind 12 or 6 MiB/s per connection (the sweep's default counts, past 16):
    /// the knee is 32 where 64 adds nothing, 64 where it still doubles.
    @Test(arguments: [(12.0, 32, "beyond 32"), (6.0, 64, "still growing at 64, the most connections a download opens")])
    func cappedConnectionsPastSixteenAreRecommended(mebibytesPerSecond: Double, knee: Int, words: String) {
        let counts = BenchPlan().connectionCounts
        #expect(counts.last == DownloadOptions.connectionRange.upperBound)
        let steps = counts.map { Self.step($0, min(Double($0) * mebibytesPerSecond * 1_048_576, 400e6)) }
        let verdict = BenchVerdict(steps: steps)
        #expect(verdict.recommendedConnections == knee)
        #expect(verdict.limit == .perConnectionCap)
        #expect(verdict.summary.contains(words), "\(verdict.summary)")
        // The sweep would have gone that far: every step up to the knee still grew.
        let rates = steps.map(\.medianBytesPerSecond)
        for index in 1..<counts.count where counts[index] <= knee {
            #expect(BenchPlan().shouldContinue(afterMedians: Array(rates[..<index])), "stopped before \(counts[index])")
        }
    }

    @Test func stillGrowingAtTheLastCountSaysMoreMayHelp() {
        let verdict = BenchVerdict(steps: [Self.step(1, 8e6), Self.step(2, 16e6), Self.step(4, 32e6)])
        #expect(verdict.recommendedConnections == 4)
        #expect(verdict.limit == .perConnectionCap)
        #expect(verdict.summary.contains("more connections may help"))
    }

    @Test func aSmallLastGainSaysTheGainsFlatten() {
        let verdict = BenchVerdict(steps: [Self.step(1, 80e6), Self.step(8, 630e6), Self.step(16, 945e6), Self.step(32, 1008e6)])
        #expect(verdict.recommendedConnections == 32)
        #expect(verdict.summary.contains("gains flatten by 32"))
    }

    @Test func conclusionWrapsToTheTerminal() {
        let report = BenchReport(url: "u", size: 1, sink: .null, oneStreamReason: nil,
                                 steps: [Self.step(1, 80e6), Self.step(8, 630e6), Self.step(16, 945e6)], nullSinkAtKnee: nil, processors: 2)
        let text = BenchRenderer.conclusion(report, width: 60)
        for line in text.split(separator: "\n") { #expect(line.count < 60, "\(line)") }
        #expect(text.contains("\n  "))
    }

    @Test func aFlatSweepBlamesTheLinkOrServerWithAKneeOfOne() {
        let verdict = BenchVerdict(steps: [Self.step(1, 1.0e9), Self.step(2, 1.02e9), Self.step(4, 0.98e9)])
        #expect(verdict.recommendedConnections == 1)
        #expect(verdict.limit == .linkOrServer)
    }

    @Test func aBusyMeasuringThreadIsACPULimit() {
        let verdict = BenchVerdict(steps: [Self.step(1, 1.0e9, cpu: 0.95), Self.step(2, 1.0e9, cpu: 0.97)])
        #expect(verdict.limit == .cpu)
    }

    @Test func aSlowDiskSinkAgainstNullIsADiskLimit() {
        let steps = [Self.step(1, 300e6), Self.step(2, 310e6)]
        let verdict = BenchVerdict(steps: steps, nullSinkAtKnee: Self.step(1, 1.5e9))
        #expect(verdict.limit == .disk)
        let same = BenchVerdict(steps: steps, nullSinkAtKnee: Self.step(1, 310e6))
        #expect(same.limit == .linkOrServer)
    }

    @Test func oneStreamAndNothingMeasuredAreLabelled() {
        let one = BenchVerdict(steps: [Self.step(1, 5e6)], oneStreamReason: "the server does not accept byte ranges")
        #expect(one.limit == .oneStream)
        #expect(one.summary.contains("does not accept byte ranges"))
        #expect(BenchVerdict(steps: []).limit == .none)
        #expect(BenchVerdict(steps: [Self.step(1, 0)]).limit == .none)
    }

    @Test func stepSummariesAreMediansAndSpread() {
        let step = BenchStep(connections: 2, samples: [100, 300, 200].map {
            BenchSample(connections: 2, bytes: $0, seconds: 1, connectionBytesPerSecond: [Double($0) / 4, Double($0) * 3 / 4],
                        timeToFirstByteSeconds: 0.002, connectSeconds: 0.001, cpuSeconds: 0, retries: 1)
        })
        #expect(step.medianBytesPerSecond == 200)
        #expect(step.minimumBytesPerSecond == 100)
        #expect(step.maximumBytesPerSecond == 300)
        #expect(step.slowestConnectionBytesPerSecond == 50)
        #expect(step.fastestConnectionBytesPerSecond == 150)
        #expect(step.retries == 3)
    }

    @Test func renderedOutputFitsAndStartsWithTheVersion() {
        let report = BenchReport(url: "http://127.0.0.1/f", size: 1 << 30, sink: .null, oneStreamReason: nil,
                                 steps: [Self.step(1, 25e6), Self.step(2, 50e6), Self.step(4, 99e6)],
                                 nullSinkAtKnee: nil, processors: 2)
        for line in BenchRenderer.table(report).split(separator: "\n") { #expect(line.count <= 80, "\(line)") }
        for line in BenchRenderer.chart(report, width: 80).split(separator: "\n") { #expect(line.count <= 80, "\(line)") }
        #expect(BenchRenderer.json(step: report.steps[0], sink: .null).hasPrefix("{\"version\":1,\"event\":\"bench_step\""))
        #expect(BenchRenderer.json(summary: report).hasPrefix("{\"version\":1,\"event\":\"bench_summary\""))
        #expect(BenchRenderer.csv(report).split(separator: "\n").count == 4)
        #expect(BenchRenderer.conclusion(report).contains("recommended: -n 4"))
    }
}
