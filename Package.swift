// swift-tools-version:6.0
// pushproof: a conformance and load-testing suite for push-notification senders.
// Layout, bottom to top: C libraries from Debian (thin module maps), pure-Swift base and
// model modules, the HTTP/2 server, the spec validator, the mock gateway, the sender, the
// scenarios and the load driver, the CLI (docs/architecture.md walks through them).
import PackageDescription

let package = Package(
    name: "pushproof",
    products: [
        .executable(name: "pushproof", targets: ["pushproof"]),
        // The mock gateway in-process, for a Swift server team's own tests (README, "In your Swift tests").
        .library(name: "PushproofGateway", targets: ["PushproofGateway"]),
    ],
    targets: [
        // C libraries (Debian packages; see Makefile for the apt-get list).
        .systemLibrary(name: "CNGHTTP2", path: "Sources/System/CNGHTTP2", pkgConfig: "libnghttp2"),
        .systemLibrary(name: "COpenSSL", path: "Sources/System/COpenSSL", pkgConfig: "openssl"),
        .systemLibrary(name: "CCurl", path: "Sources/System/CCurl", pkgConfig: "libcurl"),
        .systemLibrary(name: "CSQLite", path: "Sources/System/CSQLite", pkgConfig: "sqlite3"),
        .systemLibrary(name: "CHTTPParser", path: "Sources/System/CHTTPParser"),
        .systemLibrary(name: "CLinux", path: "Sources/System/CLinux"),
        .systemLibrary(name: "CPCRE2", path: "Sources/System/CPCRE2", pkgConfig: "libpcre2-8"),
        .systemLibrary(name: "CZlib", path: "Sources/System/CZlib", pkgConfig: "zlib"),

        // Pure Swift, no C (Clocks: Glibc's clock_gettime only).
        .target(name: "JSON", path: "Sources/Base/JSON"),
        .target(name: "Clocks", path: "Sources/Base/Clocks"),
        .target(name: "Descriptors", dependencies: ["CLinux"], path: "Sources/Base/Descriptors"),
        .target(name: "Hashing", path: "Sources/Base/Hashing"),
        // Latency histograms (HDR, 3 significant digits): the driver, the sender's metrics, `check --timing`;
        // HdrHistogram's V2 encoding (zlib) and interval logs, for merging runs split over machines.
        .target(name: "Metrics", dependencies: ["Clocks", "Encoding", "CZlib"], path: "Sources/Base/Metrics"),
        .target(name: "HTTPCore", dependencies: ["JSON"], path: "Sources/Base/HTTPCore"),
        .target(name: "PushModel", dependencies: ["JSON"], path: "Sources/Model/PushModel"),

        // OpenSSL-backed crypto: JWS (ES256, RS256), keys, self-signed certificates.
        // Base64 (RFC 4648), the one codec: plain Swift, so the record line links no OpenSSL.
        .target(name: "Encoding", path: "Sources/Base/Encoding"),
        .target(name: "Crypto", dependencies: ["COpenSSL", "JSON", "Encoding"], path: "Sources/Base/Crypto"),

        // The record line (`serve --record`, `GET /requests`): its version, field names, encoder
        // and decoder, one contract for the gateway that writes it and the tools that read it.
        .target(name: "RecordLine", dependencies: ["JSON", "HTTPCore", "Encoding", "PushModel"], path: "Sources/Model/RecordLine"),

        // HTTP/2 (libnghttp2) and HTTP/1.1 (http-parser) over TLS (OpenSSL) or cleartext, epoll loops.
        .target(name: "HTTP2Server", dependencies: ["HTTPCore", "JSON", "Clocks", "Descriptors", "CNGHTTP2", "COpenSSL", "CHTTPParser", "CLinux"], path: "Sources/Transport/HTTP2Server"),

        // JSON Schema 2020-12 and the push spec format; `pattern` runs on PCRE2.
        .target(name: "SpecValidator", dependencies: ["JSON", "HTTPCore", "Encoding", "PushModel", "CPCRE2"], path: "Sources/Validation/SpecValidator"),

        // The mock APNs + FCM + OAuth gateway: validation, auth, tokens, faults, recording, admin API.
        .target(name: "MockGateway", dependencies: ["HTTPCore", "Clocks", "Descriptors", "Encoding", "Hashing", "JSON", "Crypto", "PushModel", "SpecValidator", "RecordLine"], path: "Sources/Gateway/MockGateway"),

        // The reference sender: seed rules, payloads, libcurl delivery, token cleanup.
        .target(name: "Sender", dependencies: ["JSON", "Clocks", "Descriptors", "Hashing", "Metrics", "Crypto", "PushModel", "CCurl", "CSQLite"], path: "Sources/Senders/Sender"),

        // The writers every report shares: JUnit XML, XML escaping, the HTML page, number and column
        // formatting (`Format`). Below Driver, ScenarioLoad, RecordCheck and the CLI, which write reports.
        .target(name: "Reports", path: "Sources/Harness/Reports"),

        // Load runs: fans group calls and message storms through a sender; HDR histograms,
        // thresholds, JUnit/JSON/HTML reports.
        .target(name: "Driver", dependencies: ["JSON", "Clocks", "Crypto", "Hashing", "Metrics", "PushModel", "Reports"], path: "Sources/Harness/Driver"),

        // Scenarios: the file model (people, devices, events, expected deliveries), its decoder
        // and generator, and the delivery comparison `check --expect` and `run` share.
        .target(name: "Scenario", dependencies: ["JSON", "Hashing", "PushModel"], path: "Sources/Model/Scenario"),

        // `pushproof run`: the sender seam, the reference sender behind it, an embedded
        // gateway, and the verdicts per event and per token-cleanup rule.
        .target(name: "ScenarioRunner", dependencies: ["JSON", "Clocks", "Descriptors", "Hashing", "PushModel", "Crypto", "HTTPCore", "HTTP2Server",
                                                       "MockGateway", "SpecValidator", "Sender", "Scenario", "RecordLine", "Reports"], path: "Sources/Harness/ScenarioRunner"),

        // Scenario-driven load (`drive --scenario`, `plan --scenario`): a scenario's events through any
        // ScenarioSender, each push the gateway answers matched to its event; the Driver's reports.
        // Above Driver and ScenarioRunner, which stay apart (docs/architecture.md).
        .target(name: "ScenarioLoad", dependencies: ["JSON", "Clocks", "Metrics", "PushModel", "MockGateway", "SpecValidator", "Scenario", "RecordLine",
                                                     "ScenarioRunner", "Driver", "Reports"], path: "Sources/Harness/ScenarioLoad"),

        // `pushproof check`: a recording judged against the push specs, streamed a line at a time,
        // and the recording's own checks (seq gaps, stored verdicts), as a typed report.
        .target(name: "RecordCheck", dependencies: ["JSON", "Clocks", "Encoding", "Metrics", "PushModel", "RecordLine", "SpecValidator", "Reports"],
                path: "Sources/Harness/RecordCheck"),

        // A `pushproof serve` elsewhere as a scenario's gateway (`run`, `drive`, `plan --gateway`): its
        // control API client (over the Sender's `CurlRequest`) and the request-journal follower.
        .target(name: "RemoteGateway", dependencies: ["JSON", "Clocks", "Descriptors", "MockGateway", "RecordLine", "Scenario", "SpecValidator", "Sender",
                                                      "Driver", "ScenarioRunner", "ScenarioLoad"], path: "Sources/Harness/RemoteGateway"),

        // A load run on Kubernetes as plain objects (`pushproof k8s`): the manifests (an Indexed Job of
        // segments, a gateway StatefulSet), a segment pod's environment as drive options, results out of pod logs.
        .target(name: "Fleet", dependencies: ["JSON"], path: "Sources/Harness/Fleet"),

        // The in-process mock for Swift server teams' tests: a small, stable public API over the
        // embedded gateway `run` uses.
        .target(name: "PushproofGateway", dependencies: ["JSON", "MockGateway", "PushModel", "RecordLine", "Scenario", "ScenarioRunner", "SpecValidator"],
                path: "Sources/Library/PushproofGateway"),

        // Subcommands as a library so tests can run them in-process; the executable is a thin shell.
        .target(name: "PushproofCLI", dependencies: ["JSON", "Clocks", "Descriptors", "Metrics", "HTTPCore", "HTTP2Server", "Crypto", "PushModel", "MockGateway", "SpecValidator", "Sender", "Driver", "Scenario", "ScenarioRunner", "ScenarioLoad", "RemoteGateway", "RecordCheck", "Reports", "RecordLine", "Fleet"], path: "Sources/CLI/PushproofCLI"),
        .executableTarget(name: "pushproof", dependencies: ["Descriptors", "PushproofCLI"], path: "Sources/CLI/pushproof"),

        // Shared by the test targets: client tools, raw sockets, a live `pushproof serve`.
        .target(name: "PushproofTestSupport", dependencies: ["Hashing"], path: "Sources/Testing/PushproofTestSupport"),

        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "ClocksTests", dependencies: ["Clocks"]),
        .testTarget(name: "DescriptorsTests", dependencies: ["Descriptors"]),
        .testTarget(name: "HashingTests", dependencies: ["Hashing"]),
        .testTarget(name: "HTTPCoreTests", dependencies: ["HTTPCore", "JSON"]),
        .testTarget(name: "MetricsTests", dependencies: ["Metrics", "Encoding", "PushproofTestSupport"]),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto", "JSON", "Encoding"]),
        .testTarget(name: "EncodingTests", dependencies: ["Encoding"]),
        .testTarget(name: "HTTP2ServerTests", dependencies: ["Clocks", "HTTP2Server", "HTTPCore", "CCurl", "PushproofTestSupport"]),
        .testTarget(name: "SpecValidatorTests", dependencies: ["SpecValidator", "JSON", "HTTPCore", "PushModel", "PushproofTestSupport"]),
        .testTarget(name: "MockGatewayTests", dependencies: ["Clocks", "Descriptors", "MockGateway", "HTTPCore", "JSON", "Crypto", "Encoding", "Hashing", "PushModel", "SpecValidator", "RecordLine", "PushproofTestSupport"]),
        .testTarget(name: "RecordLineTests", dependencies: ["RecordLine", "HTTPCore", "JSON", "PushModel"]),
        .testTarget(name: "SenderTests", dependencies: ["Clocks", "Metrics", "Sender", "JSON", "Crypto", "Encoding", "PushModel", "PushproofTestSupport"]),
        .testTarget(name: "ReportsTests", dependencies: ["Reports"]),
        .testTarget(name: "DriverTests", dependencies: ["Driver", "Clocks", "Metrics", "JSON", "PushModel"]),
        .testTarget(name: "ScenarioTests", dependencies: ["Scenario", "PushModel", "JSON", "Hashing"]),
        .testTarget(name: "ScenarioRunnerTests", dependencies: ["ScenarioRunner", "Scenario", "Sender", "JSON", "PushModel", "RecordLine", "PushproofTestSupport"]),
        .testTarget(name: "PushproofGatewayTests", dependencies: ["PushproofGateway", "Crypto", "JSON", "PushproofTestSupport"]),
        .testTarget(name: "ScenarioLoadTests", dependencies: ["ScenarioLoad", "ScenarioRunner", "Scenario", "Driver", "Metrics", "MockGateway", "JSON", "RecordLine"]),
        .testTarget(name: "FleetTests", dependencies: ["Fleet", "JSON", "PushproofTestSupport"], exclude: ["Golden"]),
        .testTarget(name: "RecordCheckTests", dependencies: ["RecordCheck", "SpecValidator", "JSON", "Encoding", "PushModel", "RecordLine"]),
        .testTarget(name: "PushproofCLITests", dependencies: ["PushproofCLI", "Metrics", "JSON", "Crypto", "Sender", "PushModel", "Driver", "PushproofTestSupport", "RecordLine", "RecordCheck", "Fleet", "RemoteGateway"]),
    ]
)
