"""NIST CAVP HMAC_DRBG known answers ([SHA-256], 1024 returned bits) for the
shuffler's DRBG under CPython (tests/unit/test_shuffler_drbg.py) and in the
MicroPython VM (tests/e2e/test_shuffler_drbg_vm.py)."""


# drbgvectors_no_reseed, [SHA-256] [PredictionResistance = False],
# no personalization / no additional input, COUNT = 0 and 1.
NO_RESEED = [
    ("ca851911349384bffe89de1cbdc46e6831e44d34a4fb935ee285dd14b71a7488",
     "659ba96c601dc69fc902940805ec0ca8", "",
     "e528e9abf2dece54d47c7e75e5fe302149f817ea9fb4bee6f4199697d04d5b89d54fbb978a15b5c443c9ec21036d2460"
     "b6f73ebad0dc2aba6e624abf07745bc107694bb7547bb0995f70de25d6b29e2d3011bb19d27676c07162c8b5ccde0668"
     "961df86803482cb37ed6d5c0bb8d50cf1f50d476aa0458bdaba806f48be9dcb8"),
    ("79737479ba4e7642a221fcfd1b820b134e9e3540a35bb48ffae29c20f5418ea3",
     "3593259c092bef4129bc2c6c9e19f343", "",
     "cf5ad5984f9e43917aa9087380dac46e410ddc8a7731859c84e9d0f31bd43655b924159413e2293b17610f211e09f770"
     "f172b8fb693a35b85d3b9e5e63b1dc252ac0e115002e9bedfb4b5b6fd43f33b8e0eafb2d072e1a6fee1f159df9b51e6c"
     "8da737e60d5032dd30544ec51558c6f080bdbdab1de8a939e961e06b5f1aca37"),
    # the same file, with a 256-bit personalization string, COUNT = 0
    ("5cacc68165a2e2ee20812f35ec73a79dbf30fd475476ac0c44fc6174cdac2b55",
     "6f885496c1e63af620becd9e71ecb824",
     "e72dd8590d4ed5295515c35ed6199e9d211b8f069b3058caa6670b96ef1208d0",
     "f1012cf543f94533df27fedfbf58e5b79a3dc517a9c402bdbfc9a0c0f721f9d53faf4aafdc4b8f7a1b580fcaa52338d4"
     "bd95f58966a243cdcd3f446ed4bc546d9f607b190dd69954450d16cd0e2d6437067d8b44d19a6af7a7cfa8794e5fbd72"
     "8e8fb2f2e8db5dd4ff1aa275f35886098e80ff844886060da8b1e7137846b23b"),
]
# drbgvectors_pr_false, [SHA-256], COUNT = 0: instantiate, reseed, generate x2.
RESEED = ("06032cd5eed33f39265f49ecb142c511da9aff2af71203bffaf34a9ca5bd9c0d",
          "0e66f71edc43e42a45ad3c6fc6cdc4df",
          "01920a4e669ed3a85ae8a33b35a74ad7fb2a6bb4cf395ce00334a9c9a5a5d552",
          "76fc79fe9b50beccc991a11b5635783a83536add03c157fb30645e611c2898bb2b1bc215000209208cd506cb28da2a51"
          "bdb03826aaf2bd2335d576d519160842e7158ad0949d1a9ec3e66ea1b1a064b005de914eac2e9d4f2d72a8616a802254"
          "22918250ff66a41bd2f864a6a38cc5b6499dc43f7f2bd09e1e0f8f5885935124")
