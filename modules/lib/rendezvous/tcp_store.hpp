// tcp_store.hpp — the rendezvous of ranks started as torchrun and Slurm
// scripts start them, with MASTER_ADDR and MASTER_PORT in the environment
// (rendezvous "tcp://HOST:PORT", docs/distributed.md): a key-value store
// whose keys live in rank 0's process.
//
// A job's ranks meet by setting a few keys once each and reading the
// others': Gloo's pairs their addresses (cpu_driver, through a Gloo store
// over this one), NCCL's ranks rank 0's unique id (cuda_driver). Debian's
// Gloo ships a file store (a folder every rank reaches) and a Redis one, no
// TCP store; this is the small one torchrun's convention needs. Rank 0
// listens on HOST:PORT and serves the keys; every other rank connects
// (retrying until the timeout while rank 0 starts) and asks over one
// connection. Only the rendezvous goes through it: the collectives run over
// the libraries' own connections.
//
// What it trusts: like Gloo's pairs, the network between the ranks (run
// jobs on a private network). What it refuses from anyone who connects: a
// key set twice (a rank's addresses cannot be replaced once set), keys over
// 4 KiB and values over 16 MiB, a malformed request (the connection is
// closed), more connections than four per rank, a peer that stalls mid-
// request for the timeout. A read waits for its key up to the timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace umlos::rendezvous {

// "tcp://HOST:PORT" (HOST a name, an IPv4 address or a bracketed IPv6
// one) split; false when it is not of that form or PORT is not 1..65535.
bool parse_tcp_rendezvous(const std::string& url, std::string* host, std::string* port);

class TcpStore {
 public:
  // Rank 0 listens on host:port; the others connect to it, trying until
  // `timeout` has passed. Throws std::runtime_error naming the address.
  TcpStore(const std::string& host, const std::string& port, int rank, int world, std::chrono::milliseconds timeout);
  ~TcpStore();
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  // Sets a key once (a second set of it is refused); reads one, waiting
  // for it up to the timeout. Both throw std::runtime_error naming the
  // address and the key.
  void set(const std::string& key, const std::vector<char>& data);
  std::vector<char> get(const std::string& key);
  // Waits until every key is set (up to `timeout` each, on rank 0).
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  // Rank 0's keys, and the requests of the other ranks' connections.
  void put(const std::string& key, std::vector<char> data);
  std::vector<char> take(const std::string& key, std::chrono::milliseconds timeout);
  void serve();
  void answer(int fd);
  // Another rank's request and rank 0's answer.
  std::vector<char> ask(char op, const std::string& key, const std::vector<char>* data);

  const int rank_;
  const std::chrono::milliseconds timeout_;
  std::string where_;  // host:port, for messages
  int fd_ = -1;        // rank 0: the listening socket; others: the connection
  std::atomic<bool> stop_{false};
  std::mutex m_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<char>> keys_;
  const size_t max_connections_;  // four per rank
  std::vector<int> clients_;      // under m_
  std::vector<std::thread> handlers_;
  std::thread listener_;
};

}  // namespace umlos::rendezvous
