# The harness's share of a schedule on Kafka and on Valkey, each against a direct driver of the same
# consumer (prints, asserts nothing). Included from bench/CMakeLists.txt.
add_executable(kafka_bench ${CMAKE_CURRENT_LIST_DIR}/kafka_bench.cc)
target_link_libraries(kafka_bench PRIVATE idem_bench_direct)
target_compile_definitions(kafka_bench PRIVATE IDEM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(kafka_bench idemproof-kafka-server target_kafka-dedup-table target_dedup-table)
