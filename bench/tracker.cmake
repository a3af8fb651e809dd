# Decoding speed of the protocol trackers on the recorded client sessions of tests/captures (prints MB/s
# and messages/s per capture and per protocol, asserts nothing). Included from bench/CMakeLists.txt.
add_executable(tracker_bench ${CMAKE_CURRENT_LIST_DIR}/tracker_bench.cc)
target_link_libraries(tracker_bench PRIVATE idem_proxy idem_broker_kafka fmt::fmt)
target_compile_definitions(tracker_bench PRIVATE IDEM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
