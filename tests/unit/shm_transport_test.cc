// The shared-memory transport's parts in one process: the rings of a segment, and two domains
// (ranks 0 and 1 of one epoch) that map each other's segments through /proc and read each
// other's buffers with process_vm_readv, exactly as two processes on one host do.
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>
#include <vector>

#include "shm_domain_pair.h"
#include "transport/shm/shm_access.h"
#include "transport/shm/shm_domain.h"
#include "transport/shm/shm_segment.h"

using namespace ftcomm;
using namespace ftcomm::shm;
using testing::DomainPair;
using transport::MessageTag;
using transport::OpKind;
using transport::OpSignature;
using transport::RequestPtr;

namespace {

Record eager(std::uint32_t slot, std::size_t bytes) {
  Record r{};
  r.kind = RecordKind::kEager;
  r.slot = slot;
  r.bytes = bytes;
  return r;
}

const OpSignature kP2p{OpKind::kPointToPoint, 5};
const OpSignature kSum{OpKind::kAllReduce, 5, 0, 0, -1, 64};

}  // namespace

TEST_CASE(
    "shared-memory rings carry records in order across the wrap point, and refuse "
    "what does not fit") {
  auto segment = Segment::create(0, 2, 4096, 1);
  REQUIRE(segment.ok());
  RingWriter writer(&*segment, 1);
  RingReader reader(&*segment, 1);
  std::vector<std::byte> payload(700);
  std::uint32_t written = 0, read = 0;
  for (int round = 0; round < 50; ++round) {
    while (true) {
      std::iota(reinterpret_cast<unsigned char*>(payload.data()),
                reinterpret_cast<unsigned char*>(payload.data()) + payload.size(),
                static_cast<unsigned char>(written));
      if (!writer.tryWrite(eager(written, payload.size()), payload.data(), payload.size())) break;
      ++written;
    }
    CHECK(written > read);  // a full ring refuses, an emptied one takes more
    for (const Record* r = reader.peek(); r != nullptr; r = reader.peek()) {
      REQUIRE(r->slot == read);
      const auto* data = reinterpret_cast<const unsigned char*>(r + 1);
      CHECK(data[0] == static_cast<unsigned char>(read));
      CHECK(data[699] == static_cast<unsigned char>(read + 699));
      reader.pop(*r);
      ++read;
    }
    CHECK(read == written);
  }
  std::vector<std::byte> tooLarge(4096);
  CHECK_FALSE(writer.tryWrite(eager(0, tooLarge.size()), tooLarge.data(), tooLarge.size()));
  CHECK_FALSE(reader.corrupt());
}

TEST_CASE("a ring whose writer broke its rules is marked corrupt instead of being read") {
  auto segment = Segment::create(0, 2, 4096, 1);
  REQUIRE(segment.ok());
  RingReader reader(&*segment, 1);
  SECTION("a tail beyond the capacity") {
    segment->control(1).tail.store(1 << 20);
  }
  SECTION("an unknown record kind") {
    Record r{};
    r.kind = static_cast<RecordKind>(99);
    std::memcpy(segment->ring(1), &r, sizeof r);
    segment->control(1).tail.store(64);
  }
  SECTION("an eager payload longer than the ring") {
    Record r = eager(0, 1 << 20);
    std::memcpy(segment->ring(1), &r, sizeof r);
    segment->control(1).tail.store(64);
  }
  CHECK(reader.peek() == nullptr);
  CHECK(reader.corrupt());
}

TEST_CASE("a segment is mapped only as what it was announced to be") {
  auto segment = Segment::create(0, 2, 4096, 3);
  REQUIRE(segment.ok());
  CHECK(Segment::open(::getpid(), segment->fd(), 0, 2, 3).ok());
  auto wrongEpoch = Segment::open(::getpid(), segment->fd(), 0, 2, 4);
  REQUIRE_FALSE(wrongEpoch.ok());
  CHECK_THAT(wrongEpoch.status().message(),
             Catch::Contains("not the segment of rank 0 for epoch 4"));
  CHECK_FALSE(Segment::open(::getpid(), 0, 0, 2, 3).ok());  // stdin is no segment
}

TEST_CASE("two domains exchange eager and large messages, matched by slot in any order") {
  DomainPair pair;
  std::vector<int> small(100), large(300000), gotSmall(100), gotLarge(300000), early(10),
      gotEarly(10);
  std::iota(small.begin(), small.end(), 1);
  std::iota(large.begin(), large.end(), 7);
  std::iota(early.begin(), early.end(), 99);
  // Sent before its receive exists: kept aside, then delivered.
  auto earlySend = pair.domains[0]->send(nullptr, 1, 3, 3, {3, 9, kP2p}, early.data(), 40);
  CHECK(earlySend->done());
  auto largeRecv = pair.domains[1]->recv(nullptr, 0, 3, {3, 5, kP2p}, gotLarge.data(), 1200000);
  auto smallRecv = pair.domains[1]->recv(nullptr, 0, 3, {3, 4, kP2p}, gotSmall.data(), 400);
  auto largeSend = pair.domains[0]->send(nullptr, 1, 3, 3, {3, 5, kP2p}, large.data(), 1200000);
  auto smallSend = pair.domains[0]->send(nullptr, 1, 3, 3, {3, 4, kP2p}, small.data(), 400);
  CHECK_FALSE(largeSend->done());  // a large send completes when the receiver has read it
  REQUIRE(pair.drive(largeSend));
  REQUIRE(pair.drive(smallRecv));
  REQUIRE(pair.drive(largeRecv));
  CHECK(largeSend->status().ok());
  CHECK(largeRecv->status().ok());
  CHECK(largeRecv->bytes() == 1200000);
  CHECK(gotLarge == large);
  CHECK(gotSmall == small);
  auto earlyRecv = pair.domains[1]->recv(nullptr, 0, 3, {3, 9, kP2p}, gotEarly.data(), 40);
  REQUIRE(pair.drive(earlyRecv));
  CHECK(gotEarly == early);
}

TEST_CASE(
    "a shared-memory receive reports a different operation or a longer message as a "
    "mismatch") {
  DomainPair pair;
  std::vector<char> data(100000), into(100000);
  SECTION("another signature") {
    const OpSignature other{OpKind::kAllReduce, 5, 0, 0, -1, 65};
    auto recv = pair.domains[1]->recv(nullptr, 0, 3, {3, 1, kSum}, into.data(), 256);
    pair.domains[0]->send(nullptr, 1, 3, 3, {3, 1, other}, data.data(), 256);
    REQUIRE(pair.drive(recv));
    CHECK(recv->status().code() == StatusCode::kMismatch);
    CHECK_THAT(recv->status().message(), Catch::Contains("count=65"));
  }
  SECTION("a large message longer than the buffer") {
    auto recv = pair.domains[1]->recv(nullptr, 0, 3, {3, 1, kP2p}, into.data(), 50000);
    auto send = pair.domains[0]->send(nullptr, 1, 3, 3, {3, 1, kP2p}, data.data(), 100000);
    REQUIRE(pair.drive(recv));
    CHECK(recv->status().code() == StatusCode::kMismatch);
    REQUIRE(pair.drive(send));  // the sender is let go all the same
  }
}

TEST_CASE("a large message whose sender took its buffer back before the read fails to arrive") {
  // The sender announces its buffer, then gives it back (its operation failed): whatever the
  // receiver copies now may be what the sender's caller wrote there since, so it must not land
  // as the message. A loan on another channel is not affected.
  DomainPair pair;
  std::vector<int> data(50000, 7), into(50000, 0);
  auto recv = pair.domains[1]->recv(nullptr, 0, 3, {3, 1, kP2p}, into.data(), 200000);
  auto other = pair.domains[1]->recv(nullptr, 0, 3, {3, 2, kP2p}, into.data(), 200000);
  pair.domains[0]->send(nullptr, 1, 3, 3, {3, 1, kP2p}, data.data(), 200000);
  pair.domains[0]->send(nullptr, 1, 3, 4, {3, 2, kP2p}, data.data(), 200000);
  pair.domains[0]->reclaimLoans(3);
  REQUIRE(pair.drive(recv));
  CHECK(recv->status().code() == StatusCode::kRevoked);
  CHECK_THAT(recv->status().message(), Catch::Contains("took back the buffer"));
  REQUIRE(pair.drive(other));
  CHECK(other->status().ok());
  CHECK(into == data);
}

TEST_CASE("a withdrawn large send keeps its buffer until the receiver has let go of it") {
  DomainPair pair;
  std::vector<char> data(100000);
  const int owner = 0;
  auto send = pair.domains[0]->send(&owner, 1, 3, 3, {3, 1, kP2p}, data.data(), data.size());
  pair.domains[0]->cancelAll(&owner, cancelled("test"));
  CHECK(send->done());
  CHECK(send->status().code() == StatusCode::kCancelled);
  CHECK_FALSE(send->released());
  CHECK_FALSE(pair.domains[0]->settled(&owner));
  for (int i = 0; i < 1000 && !send->released(); ++i) {
    pair.domains[1]->progress();
    pair.domains[0]->progress();
  }
  CHECK(send->released());
  CHECK(pair.domains[0]->settled(&owner));
}

TEST_CASE("a failed shared-memory peer fails what waits for it, and everything after") {
  DomainPair pair;
  std::vector<char> into(10);
  auto recv = pair.domains[1]->recv(nullptr, 0, 3, {3, 1, kP2p}, into.data(), 10);
  pair.domains[1]->failPeer(0, Status(StatusCode::kPeerFailed, "rank 0 failed: test"));
  REQUIRE(recv->done());
  CHECK(recv->status().code() == StatusCode::kPeerFailed);
  auto later = pair.domains[1]->send(nullptr, 0, 3, 3, {3, 1, kP2p}, into.data(), 10);
  REQUIRE(later->done());
  CHECK(later->status().code() == StatusCode::kPeerFailed);
}

TEST_CASE(
    "an exited shared-memory peer's eager messages that arrived before their receives still "
    "match them, and its announced ones and anything later fail") {
  DomainPair pair;
  std::vector<int> early(10), gotEarly(10, 0), large(300000, 5), gotLarge(300000);
  std::iota(early.begin(), early.end(), 99);
  REQUIRE(pair.domains[0]->send(nullptr, 1, 3, 3, {3, 9, kP2p}, early.data(), 40)->done());
  (void)pair.domains[0]->send(nullptr, 1, 3, 3, {3, 5, kP2p}, large.data(), 1200000);
  pair.domains[1]->progress();  // both are read off the ring and kept aside
  const bool exited = GENERATE(true, false);
  INFO((exited ? "the peer exited" : "the peer was reported failed"));
  pair.domains[1]->failPeer(0, Status(StatusCode::kPeerFailed, "rank 0 failed: test"), exited);
  auto recvEarly = pair.domains[1]->recv(nullptr, 0, 3, {3, 9, kP2p}, gotEarly.data(), 40);
  REQUIRE(recvEarly->done());
  if (exited) {
    CHECK(recvEarly->status().ok());
    CHECK(gotEarly == early);
  } else {
    CHECK(recvEarly->status().code() == StatusCode::kPeerFailed);
  }
  // A large message is read from the sender's memory, which went with it.
  auto recvLarge = pair.domains[1]->recv(nullptr, 0, 3, {3, 5, kP2p}, gotLarge.data(), 1200000);
  REQUIRE(recvLarge->done());
  CHECK(recvLarge->status().code() == StatusCode::kPeerFailed);
  auto never = pair.domains[1]->recv(nullptr, 0, 3, {3, 11, kP2p}, gotEarly.data(), 40);
  REQUIRE(never->done());
  CHECK(never->status().code() == StatusCode::kPeerFailed);
  // Bad arguments stay bad arguments.
  auto outside = pair.domains[1]->recv(nullptr, 5, 3, {3, 9, kP2p}, gotEarly.data(), 40);
  REQUIRE(outside->done());
  CHECK(outside->status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("a sleeping domain is woken through its eventfd by the first message, not polled") {
  DomainPair pair;
  CHECK(pair.domains[1]->arm() == -1);
  int value = 42;
  pair.domains[0]->send(nullptr, 1, 3, 3, {3, 1, kP2p}, &value, sizeof value);
  std::uint64_t woken = 0;
  CHECK(::read(pair.wake[1], &woken, sizeof woken) == sizeof woken);
  CHECK(woken == 1);
  CHECK(pair.domains[1]->arm() == 0);  // the message is there: no sleeping now
  pair.domains[0]->send(nullptr, 1, 3, 3, {3, 1, kP2p}, &value, sizeof value);
  CHECK(::read(pair.wake[1], &woken, sizeof woken) == -1);  // already woken: one write is enough
}

TEST_CASE("the access probe says whether processes may reach into each other, and why not") {
  // Where they may not (Yama ptrace_scope 1, a container without CAP_SYS_PTRACE), auto falls
  // back to UCX; the probe must then say what was refused.
  const Status& access = shm::processAccess();
  if (!access.ok()) WARN("shared memory unavailable here: " << access.message());
  CHECK((access.ok() || (access.code() == StatusCode::kPermissionDenied &&
                         access.message().find("ptrace access") != std::string::npos)));
  CHECK(&shm::processAccess() == &access);  // probed once
}

TEST_CASE("a read of a buffer its lender took back and unmapped fails with Revoked, not Internal") {
  // The lender's operation failed, it gave the buffer back, and its caller freed it: the kernel's
  // copy then finds no memory at the address (EFAULT), which is the loan's failure.
  DomainPair pair;
  const std::size_t bytes = 1 << 20;
  void* lent = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(lent != MAP_FAILED);
  std::vector<std::byte> into(bytes);
  const Loan loan{3, pair.domains[1]->loanMark(3)};
  REQUIRE(::munmap(lent, bytes) == 0);
  const auto address = reinterpret_cast<std::uint64_t>(lent);
  // Not taken back: an address the lender does not have is a bug somewhere.
  CHECK(pair.domains[0]->readPeer(1, into.data(), address, bytes, loan).code() ==
        StatusCode::kInternal);
  pair.domains[1]->reclaimLoans(3);
  const Status s = pair.domains[0]->readPeer(1, into.data(), address, bytes, loan);
  CHECK(s.code() == StatusCode::kRevoked);
  CHECK_THAT(s.message(), Catch::Contains("took back the buffer"));
}
