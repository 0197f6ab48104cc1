// For algorithms that need a power-of-two number of ranks (recursive doubling, Rabenseifner):
// n ranks are folded onto p, the largest power of two not above n. The first 2(n-p) ranks pair
// up; in each pair the even rank hands its data to the odd one and sits out, then gets the
// result back at the end. The p ranks left are numbered 0..p-1 ("virtual ranks").
#pragma once

namespace ftcomm::algorithms {

struct PowerOfTwoFold {
  explicit PowerOfTwoFold(int ranks) {
    while (p * 2 <= ranks) p *= 2;
    extra = ranks - p;
  }

  bool paired(int rank) const { return rank < 2 * extra; }
  bool sitsOut(int rank) const { return paired(rank) && rank % 2 == 0; }
  bool absorbs(int rank) const { return paired(rank) && rank % 2 == 1; }
  // The position among the p ranks that take part; meaningless for a rank that sits out.
  int virtualRank(int rank) const { return paired(rank) ? rank / 2 : rank - extra; }
  int realRank(int virtualRank) const {
    return virtualRank < extra ? 2 * virtualRank + 1 : virtualRank + extra;
  }

  int p = 1;
  int extra = 0;
};

}  // namespace ftcomm::algorithms
