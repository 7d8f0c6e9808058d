/// The headline counts of production postbacks for one ad network on one day (or any sum of them).
struct NetworkDayCounts: Equatable {
    var postbacks = 0
    var installs = 0
    var redownloads = 0
    var reengagements = 0
    /// `did_win` false: the network contributed but another won the attribution.
    var losses = 0
    /// Winners whose conversion value Apple withheld.
    var nullValues = 0

    /// Postbacks that could carry a conversion value (non-winning ones never do).
    var winners: Int { postbacks - losses }

    init() {}

    /// The counts of one `campaign_daily` row.
    init(_ record: CampaignDailyRecord) {
        (postbacks, installs, redownloads) = (record.postbacks, record.installs, record.redownloads)
        (reengagements, losses, nullValues) = (record.reengagements, record.losses, record.nullValues)
    }

    mutating func add(_ record: CampaignDailyRecord) { add(NetworkDayCounts(record)) }

    mutating func add(_ other: NetworkDayCounts) {
        postbacks += other.postbacks
        installs += other.installs
        redownloads += other.redownloads
        reengagements += other.reengagements
        losses += other.losses
        nullValues += other.nullValues
    }
}
