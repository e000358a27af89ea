// std::allocator under the target's name, for the containers the ops keep (packed weights, requantization tables):
// their instantiations (`std::vector<int, mosaiq::target_avx2::detail::allocator<int>>::_M_fill_assign`...) then
// carry the target's inline namespace in their symbols, so the copies built for two targets in one program are two
// functions, not one weak symbol the linker picks (docs/decisions.md, "Per-target containers").
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail {

template <class T>
struct allocator : std::allocator<T> {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = allocator<U>;
  };
  constexpr allocator() noexcept = default;
  template <class U>
  constexpr allocator(const allocator<U>&) noexcept {}
};

template <class T, class U>
constexpr bool operator==(const allocator<T>&, const allocator<U>&) noexcept {
  return true;
}

/// The ops' vector.
template <class T>
using vector = std::vector<T, allocator<T>>;

/// std::make_shared through the target's allocator.
template <class T, class... Args>
std::shared_ptr<T> make_shared(Args&&... args) {
  return std::allocate_shared<T>(allocator<T>{}, std::forward<Args>(args)...);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail
