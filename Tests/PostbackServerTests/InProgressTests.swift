import Dispatch
import Foundation
import Testing

@testable import PostbackServer

/// The count shutdown sleeps on instead of polling.
@Suite struct InProgressTests {
    @Test func waitingEndsWhenTheLastPieceLeaves() {
        let work = InProgress()
        #expect(work.waitUntilNone(deadline: .now()), "nothing in progress: no wait")
        work.enter()
        work.enter()
        #expect(!work.waitUntilNone(deadline: .now() + 0.05), "still in progress at the deadline")
        let leaving = DispatchSemaphore(value: 0)
        Thread {
            leaving.wait()
            work.leave()
            work.leave()
        }.start()
        leaving.signal()
        #expect(work.waitUntilNone(deadline: .now() + 10), "woken by the last leave")
    }

    @Test func closingRefusesNewWorkButLetsTheRestFinish() {
        let work = InProgress()
        #expect(work.enterIfOpen())
        work.close()
        #expect(!work.isOpen)
        #expect(!work.enterIfOpen(), "closed: nothing new starts")
        #expect(!work.waitUntilNone(deadline: .now() + 0.05), "what was let in is still counted")
        work.leave()
        #expect(work.waitUntilNone(deadline: .now() + 10))
    }
}
