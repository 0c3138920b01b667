// swift-tools-version:6.0
import Foundation
import PackageDescription

// Layers, bottom up (each folder under Sources/ is one module):
//   CLibUV, CSimdJSON   C shims over the system libraries (libuv, simdjson)
//   CChecksum           CRC-32C of the state file's log records
//   CThreadSlots        a few pointers per thread (the JSON module's scratch buffers)
//   UV                  the only Swift code that calls uv_*: loop, streams, timers, signals, processes
//   JSON                JSONValue, the parser seam (simdjson) and the writer
//   RPC                 JSON-RPC 2.0 messages, errors and framing (NDJSON / Content-Length)
//   NavGraph            the navigation graph: loading, validation, schemas, DOT/JSON output (pure)
//   NavigationCore      the coordinator tree and its commands (pure, no I/O)
//   NavServer           sockets, connections, sessions, subscriptions, preconditions
//   navd                the executable
/// Tuned release builds of the daemon's modules skip Swift's dynamic exclusivity checks and use
/// non-atomic reference counting (`-assume-single-threaded`): both sit on every request's path
/// (BENCHMARKS.md gives what they save). That is sound only because every program built from these
/// modules runs its Swift code on one thread: navd and the clients run a libuv loop on the main
/// thread, and precondition commands are child processes, not threads. Code that shares objects
/// between threads must not be added to these modules. Debug builds, which the tests use, keep both
/// checks.
///
/// Tuned builds are also laid out by a profile of navd at work (`Profiles/navd.profdata`, made by
/// `make pgo-profile`; BENCHMARKS.md "Profile-guided layout"), so that the code a request runs fits
/// the CPU's instruction cache. `NAVD_PGO=off` builds without it; `NAVD_PGO=generate` builds the
/// instrumented navd that writes a profile (to `$LLVM_PROFILE_FILE`).
let profile = Context.packageDirectory + "/Profiles/navd.profdata"
/// The first 16 hex digits of the profile's SHA-256, written here by `make pgo-profile`. SwiftPM
/// evaluates this file again only when its text changes, and does not see the profile as an
/// input: naming the digest in the flags is what makes a new profile rebuild the modules.
let profileDigest = "e8e8a3e7f171e73b"
let pgo: [String] = {
    switch Context.environment["NAVD_PGO"] {
    case "generate": return ["-Xfrontend", "-ir-profile-generate"]
    case "off": return []
    default:
        // The frontend skips LLVM for a file whose IR is unchanged, keeping an object built with an
        // older profile (or none): with one, each file of a rebuilt module goes through LLVM.
        guard FileManager.default.fileExists(atPath: profile) else { return [] }
        // The profile also splits each function's blocks the training never ran into a `.cold`
        // function of their own, placed away from the hot code (LLVM's machine function splitter).
        return ["-Xfrontend", "-ir-profile-use=\(profile)", "-Xfrontend", "-disable-incremental-llvm-codegen",
                "-Xllvm", "-enable-split-machine-functions", "-DNAVD_PROFILE_\(profileDigest)"]
    }
}()
/// The same for the C++ of the request scanner (CSimdJSON's shim, the hottest code a request runs
/// after Swift's): instrumented alike when the profile is made (IR-level, the kind Swift's is, so
/// that both write one profile), laid out and split by it after. Functions the training never ran,
/// or that changed since, are built without it: clang's warnings that say so are left out.
let cxxPGO: [String] = {
    switch Context.environment["NAVD_PGO"] {
    case "generate": return ["-fprofile-generate"]
    case "off": return []
    default:
        guard FileManager.default.fileExists(atPath: profile) else { return [] }
        return ["-fprofile-use=\(profile)", "-fsplit-machine-functions", "-Wno-profile-instr-unprofiled", "-Wno-profile-instr-out-of-date",
                "-DNAVD_PROFILE_\(profileDigest)"]
    }
}()
/// Tuned release builds use flags SwiftPM calls unsafe, and a package whose targets use them cannot
/// be depended on by version: they are on only where `NAVD_TUNED=1` (the Makefile and the scripts
/// that build navd set it), so a package that depends on NavClient gets none.
let tuned = Context.environment["NAVD_TUNED"] == "1"
/// Cluster mode (PostgreSQL, libpq) is built unless `NAVD_CLUSTER=off`: then no module of it is
/// compiled, libpq is not needed, and `navd serve --store` says that this navd has no cluster mode.
let cluster = Context.environment["NAVD_CLUSTER"] != "off"
let hotPath: [SwiftSetting] = tuned
    ? [.unsafeFlags(["-enforce-exclusivity=unchecked", "-Xfrontend", "-assume-single-threaded"] + pgo, .when(configuration: .release))]
    : []

let package = Package(
    name: "navd",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "navd", targets: ["navd"]),
        .executable(name: "navctl", targets: ["navctl"]),
        .executable(name: "nav-tui", targets: ["nav-tui"]),
        .executable(name: "navbench", targets: ["navbench"]),
        .executable(name: "nav-web", targets: ["nav-web"]),
        .library(name: "NavClient", targets: ["NavClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibUV",
            path: "Sources/CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CPostgres",
            path: "Sources/CPostgres",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .target(
            name: "CSimdJSON",
            path: "Sources/CSimdJSON",
            cxxSettings: (tuned ? [.unsafeFlags(["-O3"]), .unsafeFlags(cxxPGO, .when(configuration: .release))] : [])
                + [.define("SIMDJSON_THREADS_ENABLED", to: "1")],
            linkerSettings: [.linkedLibrary("simdjson")]
        ),
        // The release and the commit every executable's --version prints (the plugin writes the commit).
        .target(name: "BuildInfo", plugins: ["BuildInfoPlugin"]),
        .plugin(name: "BuildInfoPlugin", capability: .buildTool()),
        // CRC-32C for the state file's log (the processor's crc32 instruction where there is one).
        .target(name: "CChecksum", path: "Sources/CChecksum"),
        // A thread-local array of pointers, for the scratch buffers each thread lends (ScratchBuffers).
        .target(name: "CThreadSlots", path: "Sources/CThreadSlots"),
        .target(name: "Unchecked", dependencies: ["CChecksum"], swiftSettings: hotPath),
        .target(name: "UV", dependencies: ["CLibUV", "Unchecked"], swiftSettings: hotPath),
        .target(name: "JSON", dependencies: ["CSimdJSON", "CThreadSlots", "Unchecked"], swiftSettings: hotPath),
        .target(name: "RPC", dependencies: ["JSON", "Unchecked"], swiftSettings: hotPath),
        // NavGraph imports CYaml (libyaml's events, for positions) too: a target of the Yams package
        // that it exports only through its Yams product.
        .target(name: "NavGraph", dependencies: ["JSON", "RPC", "Unchecked", .product(name: "Yams", package: "Yams")], swiftSettings: hotPath),
        .target(name: "NavigationCore", dependencies: ["NavGraph", "JSON", "RPC", "Unchecked"], swiftSettings: hotPath),
        // `navd explore` and `navd check`'s warnings: the graph walked on the navigation core, off the request path.
        .target(name: "NavExplore", dependencies: ["NavigationCore", "NavGraph", "JSON"]),
        .target(
            name: "NavServer",
            dependencies: [
                "UV", "JSON", "RPC", "NavGraph", "NavigationCore", "CSQLite", "CChecksum", "BuildInfo", "Unchecked",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: hotPath
        ),
    ] + (cluster ? [
        // Cluster mode (`--store postgres://…`): the shared store over libpq, a module of its own.
        .target(
            name: "NavCluster",
            dependencies: [
                "NavServer", "UV", "JSON", "RPC", "NavGraph", "NavigationCore", "CPostgres",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: hotPath
        ),
    ] : []) + [
        .executableTarget(
            name: "navd",
            dependencies: (cluster ? ["NavCluster"] : []) + [
                "NavServer", "NavigationCore", "NavGraph", "NavExplore", "JSON", "RPC", "UV", "BuildInfo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(name: "NavClient", dependencies: ["JSON", "RPC", "UV"], path: "Clients/NavClient"),
        .executableTarget(
            name: "navctl",
            dependencies: ["NavClient", "JSON", "RPC", "BuildInfo", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Clients/navctl"
        ),
        .executableTarget(
            name: "nav-tui",
            dependencies: ["NavClient", "UV", "JSON", "BuildInfo", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Clients/tui"
        ),
        .executableTarget(
            name: "navbench",
            dependencies: [
                "NavClient", "UV", "JSON", "BuildInfo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "Clients/navbench"
        ),
        // nav-web: navd in a browser. NavWebServer is its server (HTTP/1.1 and WebSocket on the UV
        // layer's loop, the relay to navd, access checks, metrics, the picture), where its tests reach it.
        .target(
            name: "NavWebServer",
            dependencies: ["UV", "RPC", "Unchecked", "BuildInfo", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Clients/web/Sources/NavWebServer"
        ),
        .executableTarget(name: "nav-web", dependencies: ["NavWebServer"], path: "Clients/web/Sources/nav-web"),
        // libFuzzer targets for the parsers (`make fuzz`); a plain build replays inputs given as files.
        .executableTarget(name: "navd-fuzz", dependencies: ["JSON", "RPC", "NavGraph", "NavigationCore", "NavExplore", "NavServer", "NavClient", "NavWebServer", "UV", "Unchecked", "CChecksum",
                                                          .product(name: "Logging", package: "swift-log")], path: "Fuzz/Sources"),
        .executableTarget(name: "graph-load-bench", dependencies: ["NavGraph"], path: "Benchmarks/GraphLoadBench"),
        .executableTarget(name: "core-bench", dependencies: ["NavigationCore", "NavGraph", "JSON", "NavTesting"], path: "Benchmarks/CoreBench"),
        .testTarget(name: "JSONTests", dependencies: ["JSON", "NavTesting"]),
        .testTarget(name: "RPCTests", dependencies: ["RPC", "JSON", "NavTesting", "Unchecked"]),
        .testTarget(name: "NavGraphTests", dependencies: ["NavGraph", "JSON", "NavTesting", "Unchecked"]),
        .testTarget(name: "NavigationCoreTests", dependencies: ["NavigationCore", "NavGraph", "JSON", "NavTesting", "NavClient", "Unchecked"]),
        .testTarget(name: "NavExploreTests", dependencies: ["NavExplore", "NavigationCore", "NavGraph", "JSON", "NavTesting"]),
        .testTarget(name: "UVTests", dependencies: ["UV", "NavTesting"]),
        .testTarget(name: "UncheckedTests", dependencies: ["Unchecked"]),
        .testTarget(name: "NavServerTests", dependencies: ["NavServer", "JSON", "RPC", "NavGraph", "NavigationCore", "NavTesting", "NavClient", "CChecksum", "Unchecked",
                                                           "UV", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "EndToEndTests", dependencies: ["JSON", "UV", "NavClient", "NavTesting"]),
        .testTarget(name: "NavWebServerTests", dependencies: ["NavWebServer", "UV", "NavTesting"], path: "Clients/web/Tests/NavWebServerTests"),
        .target(name: "NavTesting", dependencies: ["JSON", "NavGraph", "NavigationCore", "CChecksum"], path: "Tests/NavTesting"),
    ]
)
