# The harness's share of a schedule on each broker, against a direct driver of the same consumer (prints,
# asserts nothing). Included from bench/CMakeLists.txt.
add_executable(brokers_bench ${CMAKE_CURRENT_LIST_DIR}/brokers_bench.cc)
target_link_libraries(brokers_bench PRIVATE idem_bench_direct)
target_compile_definitions(brokers_bench PRIVATE IDEM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(brokers_bench idemproof-kafka-server target_kafka-dedup-table target_dedup-table
                 target_nats-dedup-table target_amqp-dedup-table)
