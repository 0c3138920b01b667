// swift-tools-version:6.1
import PackageDescription

// nav-web, navd's browser front-end and inspector: a package of its own, so that navd and its
// other clients build without SwiftNIO and Hummingbird (`make web` and `make test` build it).
// NavWebServer is the server (options, access checks, the relay, metrics, the picture), tested in
// this process through raw sockets (no HTTP client package: HummingbirdTesting's would compile
// AsyncHTTPClient, NIOSSL and BoringSSL, most of a fresh build); nav-web only runs it. BuildInfo and
// its plugin are navd's own (symbolic links), so that `nav-web --version` names the same release
// and commit.
let package = Package(
    name: "nav-web",
    platforms: [.macOS(.v14)],
    products: [.executable(name: "nav-web", targets: ["nav-web"])],
    dependencies: [
        // Without Hummingbird's default traits: nav-web reads no swift-configuration (whose package
        // it would compile) and encodes no URL form with full Foundation.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .target(name: "BuildInfo", plugins: ["BuildInfoPlugin"]),
        .plugin(name: "BuildInfoPlugin", capability: .buildTool()),
        .target(
            name: "NavWebServer",
            dependencies: [
                "BuildInfo",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(name: "nav-web", dependencies: ["NavWebServer"]),
        .testTarget(
            name: "NavWebServerTests",
            dependencies: [
                "NavWebServer",
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
    ]
)
