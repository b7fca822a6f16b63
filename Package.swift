// swift-tools-version:6.2
import PackageDescription

// SwiftPM builds the core for development and `swift test`; the installable
// libuniflow.so (SONAME, static Swift runtime, version script) comes from CMake.
let package = Package(
    name: "libuniflow",
    products: [
        .library(name: "uniflow", type: .dynamic, targets: ["UniFlow"]),
    ],
    targets: [
        .systemLibrary(name: "CJansson", path: "Sources/CJansson", pkgConfig: "jansson",
                       providers: [.apt(["libjansson-dev"])]),
        .systemLibrary(name: "CUniFlow", path: "Sources/CUniFlow"),
        .systemLibrary(name: "CSystem", path: "Sources/CSystem"),
        .target(name: "UniFlow", dependencies: ["CJansson", "CUniFlow", "CSystem"], path: "Sources/UniFlow"),
        .testTarget(name: "UniFlowTests", dependencies: ["UniFlow", "CUniFlow"]),
    ]
)
