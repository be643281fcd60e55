// tcp_store.cpp — TcpStore (tcp_store.hpp).
//
// The protocol, one request at a time on a connection: a set is 'S', the
// key's length (4 bytes, big-endian), the key, the value's length, the
// value, answered 'K'; a get is 'G', the key's length, the key, answered
// 'V', the value's length, the value, once the key is set. A refusal is
// 'E', a message's length and the message. Every answer is so framed (a
// 'K' with length 0).
#include "tcp_store.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace umlos::rendezvous {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMaxKey = 4096;
constexpr uint32_t kMaxValue = 16u << 20;
constexpr uint32_t kMaxMessage = 64u << 10;

// Until fd is ready for `events` (or has failed: the next read or write
// says so), at most until `until`; false on timeout or once `stop` is set.
bool ready(int fd, short events, Clock::time_point until, const std::atomic<bool>* stop) {
  for (;;) {
    if (stop && stop->load()) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 200)));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
  }
}

// Exactly n bytes, by `until`; false on end of stream, error or timeout.
bool read_exact(int fd, void* to, size_t n, Clock::time_point until, const std::atomic<bool>* stop = nullptr) {
  auto* p = static_cast<char*>(to);
  while (n > 0) {
    if (!ready(fd, POLLIN, until, stop)) return false;
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r == 0) return false;
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool write_all(int fd, const std::vector<char>& bytes, Clock::time_point until,
               const std::atomic<bool>* stop = nullptr) {
  const char* p = bytes.data();
  size_t n = bytes.size();
  while (n > 0) {
    if (!ready(fd, POLLOUT, until, stop)) return false;
    const ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void put_u32(std::vector<char>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
}

bool read_u32(int fd, uint32_t* v, Clock::time_point until, const std::atomic<bool>* stop = nullptr) {
  unsigned char b[4];
  if (!read_exact(fd, b, 4, until, stop)) return false;
  *v = (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | uint32_t(b[3]);
  return true;
}

std::vector<char> framed(char op, const std::string& text) {
  std::vector<char> out{op};
  put_u32(out, static_cast<uint32_t>(text.size()));
  out.insert(out.end(), text.begin(), text.end());
  return out;
}

std::string ms(std::chrono::milliseconds t) { return std::to_string(t.count()) + " ms"; }

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list) ::freeaddrinfo(list);
  }
};

// A connected socket to one of `ai`'s addresses, or -1 (errno in *err):
// a non-blocking connect given at most a second, so that an address that
// drops packets does not hold the caller past its deadline.
int connect_once(const addrinfo* ai, Clock::time_point until, int* err) {
  for (; ai != nullptr; ai = ai->ai_next) {
    const int s = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (s < 0) {
      *err = errno;
      continue;
    }
    int rc = ::connect(s, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      rc = -1;
      if (ready(s, POLLOUT, std::min(until, Clock::now() + std::chrono::seconds(1)), nullptr)) {
        int so = 0;
        socklen_t len = sizeof so;
        if (::getsockopt(s, SOL_SOCKET, SO_ERROR, &so, &len) == 0 && so == 0) rc = 0;
        errno = so;
      } else {
        errno = ETIMEDOUT;
      }
    }
    if (rc == 0) {
      ::fcntl(s, F_SETFL, ::fcntl(s, F_GETFL) & ~O_NONBLOCK);
      const int one = 1;
      ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return s;
    }
    *err = errno;
    ::close(s);
  }
  return -1;
}

}  // namespace

bool parse_tcp_rendezvous(const std::string& url, std::string* host, std::string* port) {
  const std::string scheme = "tcp://";
  if (url.compare(0, scheme.size(), scheme) != 0) return false;
  const std::string rest = url.substr(scheme.size());
  size_t colon;
  if (!rest.empty() && rest[0] == '[') {  // [IPv6]:port
    const size_t close = rest.find(']');
    if (close == std::string::npos || close + 1 >= rest.size() || rest[close + 1] != ':') return false;
    *host = rest.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = rest.rfind(':');
    if (colon == std::string::npos) return false;
    *host = rest.substr(0, colon);
    if (host->find(':') != std::string::npos) return false;  // an IPv6 address needs its brackets
  }
  *port = rest.substr(colon + 1);
  if (host->empty() || port->empty() || port->size() > 5 || port->find_first_not_of("0123456789") != std::string::npos)
    return false;
  const int p = std::stoi(*port);
  return p >= 1 && p <= 65535;
}

TcpStore::TcpStore(const std::string& host, const std::string& port, int rank, int world,
                   std::chrono::milliseconds timeout)
    : rank_(rank),
      timeout_(timeout),
      where_(host + ":" + port),
      max_connections_(4 * static_cast<size_t>(std::max(world, 1))) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (rank == 0) hints.ai_flags = AI_PASSIVE;
  AddrInfo ai;
  if (const int e = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &ai.list))
    throw std::runtime_error("the rendezvous address " + where_ + " does not resolve: " + ::gai_strerror(e));
  int err = 0;
  if (rank != 0) {
    const auto until = Clock::now() + timeout_;
    while ((fd_ = connect_once(ai.list, until, &err)) < 0) {
      if (Clock::now() >= until)
        throw std::runtime_error("rank " + std::to_string(rank) + " could not reach rank 0's rendezvous at " + where_ +
                                 " within " + ms(timeout_) + ": " + std::strerror(err));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return;
  }
  for (const addrinfo* a = ai.list; a != nullptr && fd_ < 0; a = a->ai_next) {
    const int s = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (s < 0) {
      err = errno;
      continue;
    }
    const int one = 1;
    ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(s, a->ai_addr, a->ai_addrlen) == 0 && ::listen(s, 128) == 0) {
      fd_ = s;
      break;
    }
    err = errno;
    ::close(s);
  }
  if (fd_ < 0)
    throw std::runtime_error("rank 0 cannot listen for the rendezvous on " + where_ + ": " + std::strerror(err) +
                             " (MASTER_ADDR must name rank 0's host, MASTER_PORT a port free there)");
  listener_ = std::thread([this] { serve(); });
}

TcpStore::~TcpStore() {
  stop_ = true;
  if (listener_.joinable()) listener_.join();  // no connection is added after this
  {
    std::lock_guard<std::mutex> lock(m_);
    for (int c : clients_) ::shutdown(c, SHUT_RDWR);
  }
  cv_.notify_all();
  for (std::thread& t : handlers_) t.join();
  for (int c : clients_) ::close(c);
  if (fd_ >= 0) ::close(fd_);
}

void TcpStore::put(const std::string& key, std::vector<char> data) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (!keys_.emplace(key, std::move(data)).second)
      throw std::runtime_error("rendezvous key '" + key + "' set twice (two processes claim one rank of the job?)");
  }
  cv_.notify_all();
}

std::vector<char> TcpStore::take(const std::string& key, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait_for(lock, timeout, [&] { return stop_.load() || keys_.count(key) != 0; });
  const auto it = keys_.find(key);
  if (it == keys_.end())
    throw std::runtime_error("rendezvous key '" + key + "' was not set within " + ms(timeout) +
                             " (a rank did not join the job)");
  return it->second;
}

void TcpStore::serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    std::lock_guard<std::mutex> lock(m_);
    if (clients_.size() >= max_connections_) {
      ::close(c);
      continue;
    }
    const int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    clients_.push_back(c);
    handlers_.emplace_back([this, c] { answer(c); });
  }
}

// One connection's requests until it closes, sends something malformed or
// stalls mid-request; the socket is closed by the destructor.
void TcpStore::answer(int fd) {
  for (;;) {
    char op = 0;
    // Between requests a connection may idle as long as the job runs.
    if (!read_exact(fd, &op, 1, Clock::now() + std::chrono::hours(24 * 365), &stop_)) break;
    const auto until = Clock::now() + timeout_;
    uint32_t klen = 0;
    if ((op != 'S' && op != 'G') || !read_u32(fd, &klen, until, &stop_) || klen > kMaxKey) {
      write_all(fd, framed('E', "malformed rendezvous request"), until, &stop_);
      break;
    }
    std::string key(klen, '\0');
    if (!read_exact(fd, key.data(), klen, until, &stop_)) break;
    std::vector<char> reply;
    try {
      if (op == 'S') {
        uint32_t vlen = 0;
        if (!read_u32(fd, &vlen, until, &stop_) || vlen > kMaxValue) {
          write_all(fd, framed('E', "rendezvous value over " + std::to_string(kMaxValue) + " bytes"), until, &stop_);
          break;
        }
        std::vector<char> value(vlen);
        if (!read_exact(fd, value.data(), vlen, until, &stop_)) break;
        put(key, std::move(value));
        reply = framed('K', "");
      } else {
        const std::vector<char> value = take(key, timeout_);
        reply = {'V'};
        put_u32(reply, static_cast<uint32_t>(value.size()));
        reply.insert(reply.end(), value.begin(), value.end());
      }
    } catch (const std::exception& e) {
      reply = framed('E', e.what());
    }
    if (!write_all(fd, reply, Clock::now() + timeout_, &stop_)) break;
  }
  ::shutdown(fd, SHUT_RDWR);
}

std::vector<char> TcpStore::ask(char op, const std::string& key, const std::vector<char>* data) {
  std::vector<char> request = framed(op, key);
  if (data) {
    put_u32(request, static_cast<uint32_t>(data->size()));
    request.insert(request.end(), data->begin(), data->end());
  }
  // A get is answered once the key is set, which rank 0 waits for up to
  // the timeout: a little longer here, so that its own message arrives.
  const auto until = Clock::now() + timeout_ + std::chrono::seconds(5);
  const std::string lost = "rank " + std::to_string(rank_) + " lost its connection to rank 0's rendezvous at " + where_;
  if (!write_all(fd_, request, until)) throw std::runtime_error(lost);
  char status = 0;
  uint32_t len = 0;
  if (!read_exact(fd_, &status, 1, until) || !read_u32(fd_, &len, until)) throw std::runtime_error(lost);
  if (status == 'E' && len <= kMaxMessage) {
    std::string message(len, '\0');
    if (!read_exact(fd_, message.data(), len, until)) throw std::runtime_error(lost);
    throw std::runtime_error("rank 0's rendezvous at " + where_ + " refused: " + message);
  }
  if (status == 'K' && op == 'S' && len == 0) return {};
  if (status != 'V' || op != 'G' || len > kMaxValue)
    throw std::runtime_error("a malformed answer from the rendezvous at " + where_);
  std::vector<char> value(len);
  if (!read_exact(fd_, value.data(), len, until)) throw std::runtime_error(lost);
  return value;
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  if (rank_ == 0)
    put(key, data);
  else
    ask('S', key, &data);
}

std::vector<char> TcpStore::get(const std::string& key) {
  return rank_ == 0 ? take(key, timeout_) : ask('G', key, nullptr);
}

void TcpStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  for (const std::string& key : keys) {
    if (rank_ == 0)
      take(key, timeout);
    else
      ask('G', key, nullptr);
  }
}

}  // namespace umlos::rendezvous
