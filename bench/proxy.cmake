# Added latency per round trip through the proxies, side by side with direct connections.
add_executable(proxy_bench ${CMAKE_CURRENT_LIST_DIR}/proxy_bench.cc)
target_link_libraries(proxy_bench PRIVATE idem_proxy idem_servers)
