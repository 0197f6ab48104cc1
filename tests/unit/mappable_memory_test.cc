// ftcomm::allocMem's memory (transport/shm/mappable_memory.h): what a same-host peer reads from
// its own mapping instead of with cross-memory attach. Two domains in one process stand in for
// two members. To tell the paths apart, the lender's own mapping is made PROT_NONE before a
// read: process_vm_readv then fails (it goes through the lender's page tables), while a copy
// from the reader's mapping of the same memfd does not.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>
#include <vector>

#include "algorithms/direct/staging.h"
#include "ftcomm/memory.h"
#include "shm_domain_pair.h"
#include "transport/shm/shm_access.h"

using namespace ftcomm;
using namespace ftcomm::shm;
using testing::DomainPair;

namespace {

constexpr std::uint16_t kChannel = 5;

// Rank 0 reads `bytes` at `address` of rank 1 (this process) under rank 1's current loan mark.
Status readFromRankOne(DomainPair& pair, void* into, const void* address, std::size_t bytes) {
  const Loan loan{kChannel, pair.domains[1]->loanMark(kChannel)};
  return pair.domains[0]->readPeer(1, into, reinterpret_cast<std::uint64_t>(address), bytes, loan);
}

struct AllocMemBuffer {
  explicit AllocMemBuffer(std::size_t n) : bytes(n) {
    auto memory = allocMem(n);
    REQUIRE(memory.ok());
    data = static_cast<std::byte*>(*memory);
  }
  ~AllocMemBuffer() {
    ::mprotect(data, bytes, PROT_READ | PROT_WRITE);
    CHECK(freeMem(data).ok());
  }
  void fill(int seed) {
    for (std::size_t i = 0; i < bytes; ++i)
      data[i] = std::byte(static_cast<unsigned>(i * 7 + seed));
  }
  void hide() { REQUIRE(::mprotect(data, bytes, PROT_NONE) == 0); }
  std::byte* data;
  std::size_t bytes;
};

}  // namespace

TEST_CASE(
    "allocMem gives page-aligned, zero-filled memory, and freeMem refuses what it did not give") {
  auto memory = allocMem(10000);
  REQUIRE(memory.ok());
  auto* bytes = static_cast<const unsigned char*>(*memory);
  CHECK(reinterpret_cast<std::uintptr_t>(bytes) % static_cast<std::uintptr_t>(::getpagesize()) ==
        0);
  CHECK(std::all_of(bytes, bytes + 10000, [](unsigned char b) { return b == 0; }));
  CHECK(allocMem(0).status().code() == StatusCode::kInvalidArgument);
  int onStack = 0;
  CHECK(freeMem(&onStack).code() == StatusCode::kInvalidArgument);
  CHECK(freeMem(nullptr).code() == StatusCode::kInvalidArgument);
  CHECK(freeMem(static_cast<unsigned char*>(*memory) + 1).code() == StatusCode::kInvalidArgument);
  CHECK(freeMem(*memory).ok());
  CHECK_THAT(freeMem(*memory).message(), Catch::Contains("not returned by allocMem"));
}

TEST_CASE("a peer's allocMem buffer is read from the reader's mapping, a heap buffer is not") {
  if (!processAccess().ok()) return;  // no shared memory here at all
  DomainPair pair;
  AllocMemBuffer lent(1 << 20);
  lent.fill(1);
  std::vector<std::byte> want(lent.data, lent.data + lent.bytes), into(lent.bytes);
  lent.hide();
  REQUIRE(readFromRankOne(pair, into.data(), lent.data, lent.bytes).ok());
  CHECK(into == want);
  // A part of it, at an offset.
  std::vector<std::byte> part(4096);
  REQUIRE(readFromRankOne(pair, part.data(), lent.data + 12345, part.size()).ok());
  CHECK(std::equal(part.begin(), part.end(), want.begin() + 12345));
  // The same protection on a heap buffer: cross-memory attach, which now fails.
  std::vector<std::byte> heapBytes(1 << 20);
  void* page = reinterpret_cast<void*>((reinterpret_cast<std::uintptr_t>(heapBytes.data()) + 4095) /
                                       4096 * 4096);
  REQUIRE(::mprotect(page, 4096, PROT_NONE) == 0);
  CHECK_FALSE(readFromRankOne(pair, into.data(), page, 4096).ok());
  REQUIRE(::mprotect(page, 4096, PROT_READ | PROT_WRITE) == 0);
}

TEST_CASE("a range past the end of an allocMem buffer is read with cross-memory attach") {
  if (!processAccess().ok()) return;
  DomainPair pair;
  AllocMemBuffer lent(8192);
  lent.hide();
  std::vector<std::byte> into(8192 + 4096);
  // Not inside the region: not from the mapping; the lender's pages refuse the kernel's copy.
  CHECK_FALSE(readFromRankOne(pair, into.data(), lent.data + 4096, 8192).ok());
  CHECK(readFromRankOne(pair, into.data(), lent.data + 4096, 4096).ok());
}

TEST_CASE("memory freed and allocated again is read as it is now, not from an old mapping") {
  if (!processAccess().ok()) return;
  DomainPair pair;
  std::vector<std::byte> into(65536);
  for (int round = 0; round < 5; ++round) {
    AllocMemBuffer lent(65536);
    lent.fill(round);
    std::vector<std::byte> want(lent.data, lent.data + lent.bytes);
    lent.hide();
    INFO("round " << round);
    REQUIRE(readFromRankOne(pair, into.data(), lent.data, lent.bytes).ok());
    CHECK(into == want);
  }
}

TEST_CASE("a read from a mapping fails when the lender took its buffer back meanwhile") {
  if (!processAccess().ok()) return;
  DomainPair pair;
  AllocMemBuffer lent(65536);
  lent.hide();
  std::vector<std::byte> into(65536);
  const Loan loan{kChannel, pair.domains[1]->loanMark(kChannel)};
  pair.domains[1]->reclaimLoans(kChannel);
  const Status s = pair.domains[0]->readPeer(
      1, into.data(), reinterpret_cast<std::uint64_t>(lent.data), lent.bytes, loan);
  CHECK(s.code() == StatusCode::kRevoked);
  CHECK_THAT(s.message(), Catch::Contains("took back the buffer"));
}

TEST_CASE("past 255 live allocations the memory still works, read with cross-memory attach") {
  if (!processAccess().ok()) return;
  DomainPair pair;
  std::vector<std::unique_ptr<AllocMemBuffer>> buffers;
  for (int i = 0; i < 300; ++i) buffers.push_back(std::make_unique<AllocMemBuffer>(4096));
  std::vector<std::byte> into(4096);
  int mapped = 0, attached = 0;
  for (auto& buffer : buffers) {
    buffer->fill(3);
    std::vector<std::byte> want(buffer->data, buffer->data + 4096);
    REQUIRE(readFromRankOne(pair, into.data(), buffer->data, 4096).ok());
    CHECK(into == want);
    buffer->hide();  // now only a mapped one can be read
    if (readFromRankOne(pair, into.data(), buffer->data, 4096).ok()) {
      ++mapped;
    } else {
      ++attached;
    }
  }
  // Earlier tests' allocations are freed: the table holds these alone.
  CHECK(mapped == 255);
  CHECK(attached == 45);
}

TEST_CASE("a large message from an allocMem buffer is copied from the receiver's mapping") {
  if (!processAccess().ok()) return;
  DomainPair pair;
  const transport::OpSignature p2p{transport::OpKind::kPointToPoint, 5};
  AllocMemBuffer lent(200000);  // past the eager size: announced, then read by the receiver
  lent.fill(9);
  std::vector<std::byte> want(lent.data, lent.data + lent.bytes), into(lent.bytes);
  lent.hide();
  auto recv = pair.domains[1]->recv(nullptr, 0, 3, {3, 1, p2p}, into.data(), into.size());
  auto send = pair.domains[0]->send(nullptr, 1, 3, 3, {3, 1, p2p}, lent.data, lent.bytes);
  REQUIRE(pair.drive(recv));
  CHECK(recv->status().toString() == "OK");
  CHECK(into == want);
  REQUIRE(pair.drive(send));
  CHECK(send->status().ok());
}

TEST_CASE("a forked child's allocMem and freeMem leave the parent's table alone") {
  // The child shares the table's pages: had it written there, its free of the parent's buffer
  // would unlist it, and the parent's peers would read it with cross-memory attach (which the
  // PROT_NONE below makes fail).
  if (!processAccess().ok()) return;
  DomainPair pair;
  AllocMemBuffer lent(65536);
  lent.fill(4);
  std::vector<std::byte> want(lent.data, lent.data + lent.bytes), into(lent.bytes);
  const pid_t child = ::fork();
  if (child == 0) {
    auto more = allocMem(4096);
    const bool ok = more.ok() && freeMem(*more).ok() && freeMem(lent.data).ok();
    ::_exit(ok ? 0 : 1);
  }
  REQUIRE(child > 0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  lent.hide();
  REQUIRE(readFromRankOne(pair, into.data(), lent.data, lent.bytes).ok());
  CHECK(into == want);
}

TEST_CASE("staging buffers come from the memory installed for them and go back to it") {
  // The communicator layer installs allocMem's memory here, so that a direct reduce's root
  // reads the non-roots' staged slices from its mappings.
  static int allocations = 0, releases = 0;
  algorithms::setStagingMemory({[](std::size_t bytes) -> void* {
                                  ++allocations;
                                  return ::operator new(bytes);
                                },
                                [](void* memory) {
                                  ++releases;
                                  ::operator delete(memory);
                                }});
  const std::size_t big = std::size_t{96} << 20;  // larger than any buffer kept before
  {
    auto first = algorithms::Staging::take(big);
    REQUIRE(first);
    CHECK(allocations == 1);
  }  // kept for the next operation
  {
    auto reused = algorithms::Staging::take(big / 2);
    CHECK(allocations == 1);
    auto second = algorithms::Staging::take(big + 4096);  // the kept one is in use
    CHECK(allocations == 2);
  }  // the larger one is kept, the other goes back through release()
  CHECK(releases == 1);
  algorithms::setStagingMemory({});
}
