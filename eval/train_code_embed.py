"""Train the code adaptation of the static embedding, once, offline, numpy only.

    .venv/bin/python -m memtree.eval.train_code_embed [--cache DIR] [--out FILE] [--steps N] [--dev-only]

What it learns (shipped as memtree/recall/wordllama_code2.npz, 2.8 MB): for
each token t of wordllama's l2_supercat table E, a weight w[t] and a delta
row D[t] (from 0), so a token's vector is ``(E[t] + D[t]) * w[t]`` and a
text's ``unit(mean of its tokens' vectors)``, the text first prepared by
memtree.recall.code_text (identifiers split, keywords dropped). Both sides,
chunks and queries, get the same function; the table itself stays inside the
wordllama wheel and the provider builds the adapted one once at load. Only
the rows training moved are shipped, as int8 with a float16 scale each
(int8_rows; a truncated SVD of D is printed beside it: smaller, but it loses
part of the gain).

Training pairs: the first sentence of each documented function or class
(the query) and the chunk memtree.text.chunking makes of its definition with
every docstring blanked out (the document), plus its qualified name against
the same chunk (a fifth of the pairs, so name lookups keep working), mined
from the pinned sdists in PACKAGES (at most MAX_PAIRS_PER_PACKAGE docstring
pairs each; vendored folders skipped). Loss: symmetric InfoNCE with in-batch
negatives (temperature TAU); Adam on w, lazy Adam on D (a batch updates the
moments of its own rows only); fixed seed, so a rerun writes the same bytes.
DEV packages are held out: the script prints docstring -> chunk and name ->
chunk Recall@10 and MRR@10 over their chunks for the raw table, the prepared
text, the weights alone (code1's recipe), the full deltas, their SVDs and the
shipped file, and those figures (never an eval's queries) choose the settings.

PACKAGES are disjoint from the broad eval's corpus (eval/broad_corpus.py),
the recall eval's (eval/recall_queries.py), the calibration set
(eval/recall_calibrate.py), the standard library, and the best-known
libraries that published code-search benchmarks draw on. Left out: eventlet
(vendors standard-library copies) and ruamel.yaml (its sdist's top folder is
not its file name). Each sdist is fetched once with pip (``--no-deps
--no-binary :all:``), checked against its sha256 and extracted into the
shared eval cache (train-corpus/).
"""

from __future__ import annotations

import argparse
import ast
import glob
import hashlib
import os
import sys
import time

from memtree.eval import broad_corpus, sdists
from memtree.eval.recall_calibrate import first_sentence

# name, version, sdist file, sha256: one pin a line
PACKAGES: list[tuple[str, str, str, str]] = [
    tuple(line.split())
    for line in """
agate 1.14.2 agate-1.14.2.tar.gz 7f29841c39d84b1de7fde762b8d792085371515324f3a01413b20f810398225b
aiosqlite 0.22.1 aiosqlite-0.22.1.tar.gz 043e0bd78d32888c0a9ca90fc788b38796843360c855a7262a532813133a0650
aiostream 0.8.1 aiostream-0.8.1.tar.gz 32d180b4ab01ebb2fc59eda7fa59f496895a4d07b32fc57537d1dade2514a8a1
alembic 1.20.1 alembic-1.20.1.tar.gz 83490def1f723413db5096591f7609ac52544805be93849170088ed04f5a2e0b
amqp 5.4.2 amqp-5.4.2.tar.gz 9362660c4a31150cf18e78cae2ce8aa1e929fc6c6739e69f6dd5dbea9c3edc82
APScheduler 3.11.3 apscheduler-3.11.3.tar.gz cd2fcc9330039a81a5893472ad49facf23a6d5604cbe1d918c835c6de7834d5a
arrow 1.4.0 arrow-1.4.0.tar.gz ed0cc050e98001b8779e84d461b0098c4ac597e88704a655582b21d116e526d7
asciimatics 1.15.0 asciimatics-1.15.0.tar.gz cfdd398042727519d8b73e62b8ef82c0becfed4eb420899c3b96c98d0b96821a
astor 0.8.1 astor-0.8.1.tar.gz 6a6effda93f4e1ce9f618779b2dd1d9d84f1e32812c23a29b3fff6fd7f63fa5e
astroid 4.3.4 astroid-4.3.4.tar.gz d515a105722b72098bbe82d430d65e635f742b6cbac3bdfaf8b7c188b87c5e39
asttokens 3.0.2 asttokens-3.0.2.tar.gz 3ecdbd8f2cc195f53ccada3a613538bb5f9ef6f6869129f13e03c30a677b8fe2
asyncssh 2.24.1 asyncssh-2.24.1.tar.gz efcd36e9b35f79873535b06444a7c9b0a3c61d97081b208c7fdd3fd8a40f1eca
authlib 1.9.10 authlib-1.9.10.tar.gz f7453c4a3f5975f94cc55223c4d48ff9c7d8d3b4e3d727ed2549edaeb9b85d50
automat 25.4.16 automat-25.4.16.tar.gz 0017591a5477066e90d26b0e696ddc143baafd87b588cfac8100bc6be9634de0
autopep8 2.3.2 autopep8-2.3.2.tar.gz 89440a4f969197b69a995e4ce0661b031f455a9f776d2c5ba3dbd83466931758
Babel 2.19.0 babel-2.19.0.tar.gz fddd2cbbbac7c299af3c2880be23609c331bd94f0912baca6cb0abfe054dfc27
bandit 1.9.4 bandit-1.9.4.tar.gz b589e5de2afe70bd4d53fa0c1da6199f4085af666fde00e8a034f152a52cd628
bitstring 5.0.0 bitstring-5.0.0.tar.gz 01d876b6e7bbd912bfa3ae1d028ed419ed2193245fe2337f21d30afaa391c053
blessed 1.52.0 blessed-1.52.0.tar.gz a6f42b2875c7afee78420ac9919699d5c3dce35bfa9ad45bc158b1713fc33d0d
blinker 1.9.0 blinker-1.9.0.tar.gz b4ce2265a7abece45e7cc896e98dbebe6cead56bcf805a3d23136d145f5445bf
bokeh 3.9.2 bokeh-3.9.2.tar.gz 5be30d105b329d7d2ab1cb92f51e6bd44e23f0fe21ab8d49594b220b2ab11632
cattrs 26.2.1 cattrs-26.2.1.tar.gz 679132bfdc225c5ee40c024fc42519954767c387f950dc6751946c586bccdc6d
cbor2 6.3.0 cbor2-6.3.0.tar.gz fd4d6b3533e966eec3fb33ce0f17e925fc09b512500ab7770867ebec7d7d5dc1
Cerberus 1.3.8 cerberus-1.3.8.tar.gz 579554887ffd189226774b87570f4a76db75cf0efcbaffcacd5e98b8ee877f61
cherrypy 18.10.0 cherrypy-18.10.0.tar.gz 6c70e78ee11300e8b21c0767c542ae6b102a49cac5cfd4e3e313d7bb907c5891
cliff 4.17.0 cliff-4.17.0.tar.gz 3ad61eee415a48784b42d88bdae4e17eef2a704ef64dbc529bb7936f68f0a200
cmd2 4.3.1 cmd2-4.3.1.tar.gz 708592210dc382510ee090ad7928147060bad1b460cbefb1105f8d1251376ed8
colander 2.0 colander-2.0.tar.gz 419cd68178d2ee6ee4cae5d5cb1830725634b0a2840917156e89eb2592237ef3
configobj 5.0.9 configobj-5.0.9.tar.gz 03c881bbf23aa07bccf1b837005975993c4ab4427ba57f959afdd9d1a2386848
construct 2.10.70 construct-2.10.70.tar.gz 4d2472f9684731e58cc9c56c463be63baa1447d674e0d66aeb5627b22f512c29
coverage 7.17.5 coverage-7.17.5.tar.gz 4f41d35b798714a2e79ec2097d6b03c92cd3b7de58e422fce7a1ca2c0c25b276
croniter 7.0.0 croniter-7.0.0.tar.gz a0b2568303c774f6a4ea2d4ce2e72b1ee911029c7070d64a1befe05cdb107f5a
cssutils 2.15.0 cssutils-2.15.0.tar.gz e9739237f3915037dacba787c4b58f280e3ec5d9864953e185bf23d40ff7d021
curio 1.6 curio-1.6.tar.gz 562a586db20216ba7d2be8263deb9eb079e56048f9b8906d11d5f45aa81c5247
dask 2026.8.0 dask-2026.8.0.tar.gz 8a94c37b5de6d869343340dc26c3c3acca7ec48a3abdabe00ea3abb1125884d5
dataset 2.0.0 dataset-2.0.0.tar.gz 0e13d309dfbaafb3e67b991605ce6767867262908864455505c415442c0bba45
dateparser 1.5.0 dateparser-1.5.0.tar.gz 08d62f2c00d3a1e806fc59d40c79e7554e31d84d3b8c6145820af051c92e7292
diskcache 5.6.3 diskcache-5.6.3.tar.gz 2c3a3fa2743d8535d832ec61c2054a1641f41775aa7c556758a109941e33e4fc
docopt 0.6.2 docopt-0.6.2.tar.gz 49b3a825280bd66b3aa83585ef59c4a8c82f2c8a522dbe754a8bc8d08c85c491
docutils 0.23 docutils-0.23.tar.gz 746f5060322511280a1e50eb76846ed6bf2342984b2ac04dc42caa1a8d78799e
dramatiq 2.2.1 dramatiq-2.2.1.tar.gz f9fbbd2feea27b3fa4085446242a24d86f78288b20c78a93f9f0bdbd7d908cd5
dynaconf 3.3.5 dynaconf-3.3.5.tar.gz a08f6ab44025034ef3c9f86b32548ab01efd4039094a74bd9f028a43c63d016f
ecdsa 0.19.2 ecdsa-0.19.2.tar.gz 62635b0ac1ca2e027f82122b5b81cb706edc38cd91c63dda28e4f3455a2bf930
executing 2.3.0 executing-2.3.0.tar.gz 15919cb5d667e5cb4e099511971d00d659573fff2dd5c4e6cd8b71636c7858d2
fabric 3.2.3 fabric-3.2.3.tar.gz dcbd2c47ad87688facaef5cc11aab6d1ec9ed05645fed97a5de7204d5d17cc44
fastjsonschema 2.22.3 fastjsonschema-2.22.3.tar.gz 8330c91b027dcf941efcb7b1f0998515ff95d177ea15bbabdfe8671965620901
feedparser 6.0.14 feedparser-6.0.14.tar.gz 088679b0c4b543ee211a820dd544698c76a402122eae7473c04a43425f283d06
fpdf2 2.8.9 fpdf2-2.8.9.tar.gz 5b0b3786f5236a2b3cc83c1fee567df17ddd314f8c4e13d820d8f09b617ab4f0
fsspec 2026.9.0 fsspec-2026.9.0.tar.gz 0f08147951c8cb31d844c3547d631053b127863b60be04cf06e121333ee0e2fe
funcy 2.1 funcy-2.1.tar.gz 8979feb3de7120afd1d00e5a8eae810c1942e4bfbc91697151e9ee1e49f79284
furl 2.1.4 furl-2.1.4.tar.gz 877657501266c929269739fb5f5980534a41abd6bbabcb367c136d1d3b2a6015
glom 25.12.0 glom-25.12.0.tar.gz 1ae7da88be3693df40ad27bdf57a765a55c075c86c971bcddd67927403eb0069
gunicorn 27.0.1 gunicorn-27.0.1.tar.gz b1514965361c8b7e8107a80aa2a92636878df1ccfac6dd204a676426e04d9e3e
h11 0.16.0 h11-0.16.0.tar.gz 4e35b956cf45792e4caa5885e69fba00bdbc6ffafbfa020300e549b208ee5ff1
h2 4.4.1 h2-4.4.1.tar.gz 4e866ffb1a869ae14dd9b5e6beb5c24a13da0495ad72b65925ded182521c1516
httplib2 0.32.1 httplib2-0.32.1.tar.gz 37900eb8a74576bd99fc39ae1dc8409f95f965d45b56cbcb2194bb55f58a90e1
huey 3.5.4 huey-3.5.4.tar.gz 328f5a2dd1406621e5edb17d45655ae232ad9f32c0795ca8dc0bfc121dd7b30c
humanfriendly 10.0 humanfriendly-10.0.tar.gz 6b0b831ce8f15f7300721aa49829fc4e83921a9a301cc7f606be6686a2288ddc
inflect 7.6.0 inflect-7.6.0.tar.gz b46875b50534a7cd5fcfb5a7c971bb93fe68948c43ca53e9833bd1e1a69221bd
intervaltree 3.2.1 intervaltree-3.2.1.tar.gz f3f7e8baeb7dd75b9f7a6d33cf3ec10025984a8e66e3016d537e52130c73cfe2
invoke 3.0.3 invoke-3.0.3.tar.gz 437b6a622223824380bfb4e64f612711a6b648c795f565efc8625af66fb57f0c
isodate 0.7.2 isodate-0.7.2.tar.gz 4cd1aa0f43ca76f4a6c6c0292a85f40b35ec2e43e315b59f06e6d32171a953e6
jedi 0.20.1 jedi-0.20.1.tar.gz 2f71208c3f9c1bca057c0e90d3f272aba44ace88fc4067d7587e9e069331b7e5
jmespath 1.1.0 jmespath-1.1.0.tar.gz 472c87d80f36026ae83c6ddd0f1d05d4e510134ed462851fd5f754c8c3cbb88d
jsonpatch 1.48 jsonpatch-1.48.tar.gz 81e9a03754137a1201d9b534ddd599cc0eb5983fe941bce238dc8a76e442bb94
jsonpickle 4.1.4 jsonpickle-4.1.4.tar.gz 8adf24cca611809b55ff5ed2ace850e1a3e4370dad5d363df71569b8f46c9645
jsonschema 4.26.0 jsonschema-4.26.0.tar.gz 0c26707e2efad8aa1bfc5b7ce170f3fccc2e4918ff85989ba9ffa9facb2be326
kombu 5.7.0 kombu-5.7.0.tar.gz 31e62fdfd2381caa3422f8e02b84a491d9a2180ddda74507b57f4cb1e1c2c2c9
ldap3 2.9.1 ldap3-2.9.1.tar.gz f3e7fc4718e3f09dda568b57100095e0ce58633bcabbed8667ce3f8fbaa4229f
libcst 1.9.0 libcst-1.9.0.tar.gz 087b58a9afe076bb08e2d726478e1f16cb928d67ffa9092817e033c335de522a
mako 1.4.3 mako-1.4.3.tar.gz cd6537fe88d5fec315c55c2f8529bc4ce7a9a352ad7db3eeaa6a66e2dd4ec37a
markdown2 2.5.5 markdown2-2.5.5.tar.gz 001547e68f6e7fcf0f1cb83f7e82f48aa7d48b2c6a321f0cd20a853a8a2d1664
markdown_it_py 4.3.0 markdown_it_py-4.3.0.tar.gz 91a58fa5b72c71a40cf7177250fd767480d7a2bb3ac426ccfb76fb90305fdaaa
mechanize 0.4.10 mechanize-0.4.10.tar.gz 1dea947f9be7ea0ab610f7bbc4a4e36b45d6bfdfceea29ad3d389a88a1957ddf
mistletoe 1.6.0 mistletoe-1.6.0.tar.gz 92f066c4720a25fa24bf260e6413702bbff3a5b8a93af314cb6cd8589726a8e1
mistune 3.4.0 mistune-3.4.0.tar.gz 2eaf7952af928ca8d33b779762effc1da517b62c6ad85ec8ca957e3b07b9782a
mpmath 1.4.1 mpmath-1.4.1.tar.gz efd6d1b75f09d69524a67609949812668b28e81ecbfe0ab449ced8c13e92642e
netaddr 1.3.0 netaddr-1.3.0.tar.gz 5c3c3d9895b551b763779ba7db7a03487dc1f8e3b385af819af341ae9ef6e48a
networkx 3.6.1 networkx-3.6.1.tar.gz 26b7c357accc0c8cde558ad486283728b65b6a95d85ee1cd66bafab4c8168509
nltk 3.10.4 nltk-3.10.4.tar.gz 44679f4e9220abfd496d2c8cdb22f8425ccbe557604f9aa5cacb1c44003dabc1
oauthlib 4.0.1 oauthlib-4.0.1.tar.gz 3d73febdb6faa00f277c81fb04be7b7586fb96fc3b7f0b9c772dada69a25ede7
omegaconf 2.4.0 omegaconf-2.4.0.tar.gz 7e219a70bea371da250285b9c01c7db027bc421722799c2cc4ff14bc4a2a753b
openpyxl 3.1.5 openpyxl-3.1.5.tar.gz cf0e3cf56142039133628b5acffe8ef0c12bc902d2aadd3e0fe5878dc08d1050
paho_mqtt 2.2.0 paho_mqtt-2.2.0.tar.gz bcf706f03f1f49e0fc3ae166dc7b67ee35463496f8bdfd7c9c36181f6ba635c9
param 2.4.2 param-2.4.2.tar.gz 40ca94b72c97bf1998325738e002d589ce31a7cfb4cc56549f05daa6ccf98043
paramiko 5.1.0 paramiko-5.1.0.tar.gz 239b5f9b2a53006cd54f83cf8495ee742083708ead947882c8dd2786de79f39b
parsedatetime 2.6 parsedatetime-2.6.tar.gz 4cb368fbb18a0b7231f4d76119165451c8d2e35951455dfee97c62a87b04d455
parsel 1.12.1 parsel-1.12.1.tar.gz f526df846f3a91e13f5499156ea3e755114834cd126b62cd1d784ef558f3a713
parso 0.8.7 parso-0.8.7.tar.gz eaaac4c9fdd5e9e8852dc778d2d7405897ec510f2a298071453e5e3a07914bb1
passlib 1.7.4 passlib-1.7.4.tar.gz defd50f72b65c5402ab2c573830a6978e5f202ad0d984793c8dde2c4152ebe04
patsy 1.0.3 patsy-1.0.3.tar.gz 79ebf4c93ff4d296e58a9d5be2b2ee31bd49d737cf11d70ffbd8a44b2de42e65
pdfminer_six 20260107 pdfminer_six-20260107.tar.gz 96bfd431e3577a55a0efd25676968ca4ce8fd5b53f14565f85716ff363889602
petl 1.7.30 petl-1.7.30.tar.gz 9621fe7f9d81dafec3bf440496118ec1b288215400810a90f683a02c6d120792
pexpect 4.9.0 pexpect-4.9.0.tar.gz ee7d41123f3c9911050ea2c2dac107568dc43b2d3b0c7557a33212c398ead30f
pika 1.4.4 pika-1.4.4.tar.gz 8cfc8b33a5cb16e733bd60cffca9732c0d1d761ecd80a89f34ed7df2cd38d6d6
pint 0.25.3 pint-0.25.3.tar.gz f8f5df6cf65314d74da1ade1bf96f8e3e4d0c41b51577ac53c49e7d44ca5acee
plumbum 2.0.2 plumbum-2.0.2.tar.gz 233751d7819c9e6743ec1c2405927eb4fa52a284c7b894bd10e28106a9309a92
ply 3.11 ply-3.11.tar.gz 00c7c1aaa88358b9c765b6d3000c6eec0ba42abca5351b095321aef446081da3
pony 0.7.20 pony-0.7.20.tar.gz 27a48dffd1d1005956ffa96873fb2de5eada639ca266c43db480cadabc860ccd
portion 2.6.3 portion-2.6.3.tar.gz 4dd6a68bb1cd7a553d9b1f556818708b973c4a8855244e0af79e2586bba5794e
prompt_toolkit 3.0.53 prompt_toolkit-3.0.53.tar.gz 9ec8a0ad96d5c56148b3f914aa79c1564c3fde5d2e6b876e7bc327e353cf8fa6
pyasn1 0.6.5 pyasn1-0.6.5.tar.gz 6b11616a6bcf3a40e635f082bb232fa57b5e0dd7f517bd7ddd69ec3794508a47
pycodestyle 2.15.0 pycodestyle-2.15.0.tar.gz 318f5db083869b4c4dad922d0b11124fb27ab181b6730b93371da671e31bd50e
pycparser 3.12 pycparser-3.12.tar.gz f03387877eab82ce01bbdfd0ba7252ee55a90b1c708d5129e2ce915475cf1db6
pydash 8.1.0 pydash-8.1.0.tar.gz 30914c3e9d377ea2cd0d3c0a4f252889b08392f730a5eb4d117e5b598cdf1d52
pydocstyle 6.3.0 pydocstyle-6.3.0.tar.gz 7ce43f0c0ac87b07494eb9c0b462c0b73e6ff276807f204d6b53edc72b7e44e1
pyee 13.0.1 pyee-13.0.1.tar.gz 0b931f7c14535667ed4c7e0d531716368715e860b988770fc7eb8578d1f67fc8
pyexcel 0.7.6 pyexcel-0.7.6.tar.gz 489483d8c7675a4d04d0a55a1b5dd0925771e2660fa68105ca342e492f459d1b
pyflakes 4.1.0 pyflakes-4.1.0.tar.gz 592beb57058eb82eb190fb7514f2081c555c51000b029ff71286a681e6cf2f83
pyglet 2.1.19 pyglet-2.1.19.tar.gz 77fae024df940c60917ba604bab9b7e26306d66734186634b698c708cdd9f4be
pylint 4.1.4 pylint-4.1.4.tar.gz 4c9176dc6c9f1b98b742195f01899b290369d5a27b4b41d1014c17f2f96b26f1
pymysql 1.2.4 pymysql-1.2.4.tar.gz 491558165b8e11f3644c5f9cfb30cc9c9111ffd54e53d3aa91b9a0a20be2294f
pypdf 7.1.1 pypdf-7.1.1.tar.gz 2eff4e2fc5fb22a6d6711e6f1166cdc9ab5765d90cd0d77dfea3f4aa91a27b1d
pyramid 2.1 pyramid-2.1.tar.gz 5a24bc1b5f9e0f0d1c0b6ddd1111e84c15dac44a07e3c1d24e74dd9bb4fc22eb
pyrsistent 0.20.0 pyrsistent-0.20.0.tar.gz 4c48f78f62ab596c679086084d0dd13254ae4f3d6c72a83ffdf5ebdef8f265a4
pyserial 3.5 pyserial-3.5.tar.gz 3c77e014170dfffbd816e6ffc205e9842efb10be9f58ec16d3e8675b4925cddb
python_docx 1.2.0 python_docx-1.2.0.tar.gz 7bc9d7b7d8a69c9c02ca09216118c86552704edc23bac179283f2e38f86220ce
python_pptx 1.0.2 python_pptx-1.0.2.tar.gz 479a8af0eaf0f0d76b6f00b0887732874ad2e3188230315290cd1f9dd9cc7095
radon 6.0.1 radon-6.0.1.tar.gz d1ac0053943a893878940fedc8b19ace70386fc9c9bf0a09229a44125ebf45b5
rdflib 7.6.0 rdflib-7.6.0.tar.gz 6c831288d5e4a5a7ece85d0ccde9877d512a3d0f02d7c06455d00d6d0ea379df
reactivex 6.1.0 reactivex-6.1.0.tar.gz 09c856a3d727a08331e891d4af360b8a0069f34391957f21e417e62ffe81518c
redis 8.1.0 redis-8.1.0.tar.gz 6e1a19beef9225c83efd689c7e6b7da2d5215b1f42cd13b7fc3714d0a09c7b25
rope 1.15.2 rope-1.15.2.tar.gz 7ce304aa86350d9454533b6817d0c7c01301b0a4fad356d8372b5d77df35756f
Routes 2.5.1 Routes-2.5.1.tar.gz b6346459a15f0cbab01a45a90c3d25caf980d4733d628b4cc1952b865125d053
rq 3.0.0 rq-3.0.0.tar.gz b41e39b3c36ec3faf9e2402c638a0b25fe18ebb93a1cb15193bc69694f054618
rsa 4.9.1 rsa-4.9.1.tar.gz e7bdbfdb5497da4c07dfd35530e1a902659db6ff241e39d9953cad06ebd0ae75
sanic 25.12.1 sanic-25.12.1.tar.gz 7b51bf608e4030f06a6c002cd08fed2872e4936527e63c9a8a97d5cd06a2b47f
seaborn 0.13.2 seaborn-0.13.2.tar.gz 93e60a40988f4d65e9f4885df477e2fdaff6b73a9ded434c1ab356dd57eefff7
simpy 4.1.2 simpy-4.1.2.tar.gz 76ef36b71e0436ba94e55febc001c78879e493a323f045bbcfbb0b216e9b1fbc
skyfield 1.55 skyfield-1.55.tar.gz 05dce8aafbff3f007f01cabcd2eb1858c43d7465f58c13d22c5a828a6d2fc14b
sortedcontainers 2.4.0 sortedcontainers-2.4.0.tar.gz 25caa5a06cc30b6b83d11423433f65d1f9d76c4c6a0c90e3379eaa43b9bfdb88
sqlglot 30.31.0 sqlglot-30.31.0.tar.gz 448404736cb0ed1335774e34399a3a99d28274778fb718877556fb7d475d8808
structlog 26.1.0 structlog-26.1.0.tar.gz f63a716cbd1b1291cf7661de7794b455acfa4c43c5bcf1630e6ad5ddc1adb3b7
sympy 1.14.0 sympy-1.14.0.tar.gz d3d3fe8df1e5a0b42f0e7bdf50541697dbe7d23746e894990c030e2b05e72517
tabulate 0.10.0 tabulate-0.10.0.tar.gz e2cfde8f79420f6deeffdeda9aaec3b6bc5abce947655d17ac662b126e48a60d
tenacity 9.2.1 tenacity-9.2.1.tar.gz a606b5c808d0cded4a359d5b9932d867ff2a6a6b64d37350260fd01bbdf83839
textdistance 4.6.3 textdistance-4.6.3.tar.gz d6dabc50b4ea832cdcf0e1e6021bd0c7fcd9ade155888d79bb6a3c31fce2dc6f
tinycss2 1.5.1 tinycss2-1.5.1.tar.gz d339d2b616ba90ccce58da8495a78f46e55d4d25f9fd71dfd526f07e7d53f957
tinydb 4.9.0 tinydb-4.9.0.tar.gz 6928b1fa785186bda7952a0ba05aaeedc883ede565ca9c7d608de44e5e75de70
tqdm 4.70.1 tqdm-4.70.1.tar.gz cefd0eca11b2a37a3aee776544d4f4ae913f02688135b5556b8788dfa474afc4
traitlets 5.16.1 traitlets-5.16.1.tar.gz ed900c2b631aa3a112811139fa97b8d2c3bad5e989656bba4b7e52c7852c18c1
transitions 0.9.3 transitions-0.9.3.tar.gz 881fb75bb1654ed55d86060bb067f2c716f8e155f57bb73fd444e53713aafec8
twisted 26.10.0 twisted-26.10.0.tar.gz 5f0355403e507fc23ceea85e9dbb4bc59335aabde41dd324e8b8cea180dd38de
typer 0.29.2 typer-0.29.2.tar.gz b1998dc5f2c3dedafa1517a9521fa944cc4dc1fadcea085d81a3b10ebcaeb075
uncertainties 3.2.3 uncertainties-3.2.3.tar.gz 76a5653e686f617a42922d546a239e9efce72e6b35411b7750a1d12dcba03031
urwid 5.1.0 urwid-5.1.0.tar.gz 36c8aa321fe5ac0c47dccc913bfbbd504d96caad8644c5a7ada0ec8c522fb808
voluptuous 0.16.0 voluptuous-0.16.0.tar.gz 006535e22fed944aec17bef6e8725472476194743c87bd233e912eb463f8ff05
vulture 2.16 vulture-2.16.tar.gz f8d9f6e2af03011664a3c6c240c9765b3f392917d3135fddca6d6a68d359f717
w3lib 2.5.0 w3lib-2.5.0.tar.gz a7ddf714508ddc1b8563bd19ace2feb28080bbaca39326cbc964359f6754f615
waitress 3.0.2 waitress-3.0.2.tar.gz 682aaaf2af0c44ada4abfb70ded36393f0e307f4ab9456a215ce0020baefc31f
watchdog 7.1.0 watchdog-7.1.0.tar.gz d3861e255416f49a1384474cb2efa097de165fb330d4c5432ce6708b509ed922
webob 1.8.11 webob-1.8.11.tar.gz aa8c27231070b135c025e567a9cd7eda03f4df71352ffaac740cb6a75f0f81a5
websockets 17.4 websockets-17.4.tar.gz 09d3939b70df0c8ad2da145ebd50978bccaee1d565e838b0e7921a34d38571eb
wsproto 1.3.2 wsproto-1.3.2.tar.gz b86885dcf294e15204919950f666e06ffc6c7c114ca900b060d6e16293528294
wtforms 3.3.2 wtforms-3.3.2.tar.gz 49bb51d10b7832d497e758736da4d56f7d129a015db24756f36f28992f175404
xarray 2026.9.0 xarray-2026.9.0.tar.gz 6abc69694c22fa1f0fb2f357ff4e41d88beb4477ed71091f944b7dbf67ed54fe
xlsxwriter 3.3.1 xlsxwriter-3.3.1.tar.gz 0867761912cceac76f97ffa76eeda18c623ae9217f601be8512f55b1af4bdb6e
xmltodict 1.0.4 xmltodict-1.0.4.tar.gz 6d94c9f834dd9e44514162799d344d815a3a4faec913717a9ecbfa5be1bb8e61
yapf 0.43.0 yapf-0.43.0.tar.gz 00d3aa24bfedff9420b2e0d5d9f5ab6d9d4268e72afbf59bb3fa542781d5218e
zope_interface 8.7 zope_interface-8.7.tar.gz 0b47b62e8d0d99b24bcdd32f4f2120425e5019c3bee2ad69a0e1d75737487a96
""".strip().splitlines()
]
# Held out from training: the settings are chosen on these packages' figures.
DEV = {"simpy", "tinydb", "h11", "croniter", "jmespath", "voluptuous", "configobj"}
SEED = 16
TAU = 0.05
BATCH = 256
MAX_PAIRS_PER_PACKAGE = 5000
SYMBOL_SHARE = 0.2
# Chosen on DEV (docstring / name R@10; MRR@10 in docs/EMBEDDINGS.md), 77,729 pairs from 153
# packages: prepared text 0.559 / 0.640; weights alone 0.576 / 0.694 (the shipped code1, 11k
# pairs: 0.586 / 0.688); weights and deltas 0.658 / 0.739 at lr_rows 0.01 (0.003: 0.621, 0.03:
# 0.613, with an L2 of 1e-4 on the deltas); an L2 toward 0 on the deltas only cost: 1e-5 0.645,
# 3e-5 0.638, 1e-4 0.618, 1e-3 0.589 (so none); 2,400 steps no better than 1,200; lr 0.02 on
# the weights 0.655. Shipped as int8 rows (2.8 MB): 0.658 / 0.739, all of it; SVD rank
# 32 / 64 / 128 (0.7 / 1.3 / 2.7 MB): 0.631 / 0.631 / 0.638 docstring R@10; int4 rows (1.4 MB,
# measured once) 0.645.
STEPS = 1200  # weights and row deltas
STEPS_WEIGHTS = 300  # weights alone (code1's recipe), printed for comparison
LR = 5e-3  # the weights
LR_ROWS = 0.01  # the row deltas
REG = 1e-3  # the weights' L2 toward 1
RANKS = (32, 64, 128)  # truncated SVDs of the deltas, printed for comparison (not shipped)
OUT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "memtree", "recall", "wordllama_code2.npz"
)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# Vendored copies are someone else's code, often the standard library's (yapf vendors
# lib2to3, jedi typeshed, pyglet pypng in extlibs): not what a package's docstrings describe.
_SKIP = broad_corpus._SKIP_DIRS | {"scripts", "tools", "build", "third_party", "vendor", "_vendor", "extern", "extlibs"}


def fetch(cache: str) -> str:
    root = os.path.join(cache, "train-corpus")
    dl = os.path.join(cache, "sdists")
    os.makedirs(root, exist_ok=True)
    for name, version, fname, sha in PACKAGES:
        sdists.fetch_pinned(name, version, fname, sha, dl, root)
    return root


def source_files(top: str) -> list[str]:
    out = []
    for path in sorted(glob.glob(os.path.join(top, "**", "*.py"), recursive=True)):
        rel = os.path.relpath(path, top).split(os.sep)
        if any(p in _SKIP for p in rel[:-1]) or rel[-1].startswith("test") or rel[-1] in ("conftest.py", "setup.py"):
            continue
        out.append(path)
    return out


def _defs(tree: ast.Module):
    """(qualified name, node) of every function and class, methods as Class.method."""
    stack = [("", n) for n in tree.body]
    while stack:
        prefix, node = stack.pop()
        if isinstance(node, _DEFS):
            name = f"{prefix}{node.name}"
            yield name, node
            if isinstance(node, ast.ClassDef):
                stack += [(f"{name}.", n) for n in node.body]


def mine(top: str) -> tuple[list[tuple[str, int]], list[str]]:
    """([(query, chunk index)], chunk texts) of one package, docstrings blanked in the chunks."""
    from memtree.text.chunking import chunk_text

    pairs, chunks = [], []
    for path in source_files(top):
        try:
            text = open(path, encoding="utf-8").read()
            tree = ast.parse(text)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        got = chunk_text(path, broad_corpus.strip_docstrings(text)).chunks
        base = len(chunks)
        chunks += [c["content"] for c in got]
        spans = [(c["start"], c["end"], base + i) for i, c in enumerate(got)]
        for name, node in _defs(tree):
            line = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            inside = [s for s in spans if s[0] <= line <= s[1]]
            if not inside:
                continue
            idx = min(inside, key=lambda s: s[1] - s[0])[2]
            doc = ast.get_docstring(node, clean=True)
            sent = first_sentence(doc) if doc else None
            if sent:
                pairs.append((sent, idx))
            if not name.split(".")[-1].startswith("__"):
                pairs.append(("\0" + name, idx))  # a name query, marked
    return pairs, chunks


# -- featurising and the model ----------------------------------------------------------------


class Base:
    """The provider's tokenizer and table (read as StaticProvider reads them)."""

    def __init__(self):
        from memtree.recall.embeddings import StaticProvider

        p = StaticProvider(adapt=False)
        self.tokenizer, self.table = p.tokenizer, p.table.astype("float32")

    def ids(self, texts: list[str], prepared: bool):
        import numpy as np

        from memtree.recall import code_text
        from memtree.recall.embeddings import MAX_CHARS

        texts = [code_text.prepare(t[:MAX_CHARS]) if prepared else t[:MAX_CHARS] for t in texts]
        rows = self.table.shape[0]
        out = []
        for enc in self.tokenizer.encode_batch(texts, add_special_tokens=False):
            ids = np.asarray(enc.ids, dtype=np.int64)
            out.append(ids[ids < rows])
        return out


def pool(table, ids_list):
    """Unit mean of each text's rows of ``table`` (float32, adapted or not)."""
    import numpy as np

    out = np.zeros((len(ids_list), table.shape[1]), np.float32)
    for i, ids in enumerate(ids_list):
        if ids.size:
            out[i] = table[ids].mean(axis=0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return out / norms


def retrieval(qv, dv, gold) -> tuple[float, float]:
    """(Recall@10, MRR@10) of each query's gold chunk among all chunks."""
    import numpy as np

    sims = qv @ dv.T
    gold = np.asarray(gold)
    score = sims[np.arange(len(gold)), gold][:, None]
    rank = (sims > score).sum(axis=1)
    return float((rank < 10).mean()), float(np.where(rank < 10, 1.0 / (rank + 1), 0.0).mean())


def train(base: Base, pairs, chunk_ids, steps: int, lr: float, lr_rows: float | None = None):
    """Per-token weights w and, when ``lr_rows`` is given, per-row deltas D (V x dim,
    from 0) by symmetric InfoNCE (numpy, manual gradients): a token's vector is
    ``(E[t] + D[t]) * w[t]``. Adam on w; lazy Adam on D (only the rows a batch
    holds get moment updates: the rest of the 32k x 256 table stays 0, so it
    ships small)."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    E = base.table
    V, dim = E.shape
    w = np.ones(V, np.float32)
    D = np.zeros((V, dim), np.float32) if lr_rows else None
    mw, vw = np.zeros_like(w), np.zeros_like(w)
    mD, vD = (np.zeros_like(D), np.zeros_like(D)) if lr_rows else (None, None)
    b1, b2, eps = 0.9, 0.999, 1e-8
    q_ids = [p[0] for p in pairs]
    d_ids = [chunk_ids[p[1]] for p in pairs]
    order = rng.permutation(len(pairs))
    pos = 0
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        if pos + BATCH > len(order):
            order, pos = rng.permutation(len(pairs)), 0
        batch = order[pos : pos + BATCH]
        pos += BATCH
        qs, ds = [q_ids[i] for i in batch], [d_ids[i] for i in batch]
        U, inv = np.unique(np.concatenate(qs + ds), return_inverse=True)
        B = len(batch)

        def counts(lists, offset):
            S = np.zeros((B, len(U)), np.float32)
            o = offset
            for i, ids in enumerate(lists):
                np.add.at(S[i], inv[o : o + len(ids)], 1.0 / max(len(ids), 1))
                o += len(ids)
            return S, o

        Sq, off = counts(qs, 0)
        Sd, _ = counts(ds, off)
        rowsU = E[U] if D is None else E[U] + D[U]
        wU = w[U]
        RU = rowsU * wU[:, None]
        Xq, Xd = Sq @ RU, Sd @ RU
        nq = np.linalg.norm(Xq, axis=1, keepdims=True) + 1e-6
        nd = np.linalg.norm(Xd, axis=1, keepdims=True) + 1e-6
        Zq, Zd = Xq / nq, Xd / nd
        L = Zq @ Zd.T / TAU
        Pr = np.exp(L - L.max(axis=1, keepdims=True))
        Pr /= Pr.sum(axis=1, keepdims=True)
        Pc = np.exp(L - L.max(axis=0, keepdims=True))
        Pc /= Pc.sum(axis=0, keepdims=True)
        eye = np.eye(B, dtype=np.float32)
        loss = -(np.log(np.diag(Pr) + 1e-9).mean() + np.log(np.diag(Pc) + 1e-9).mean()) / 2
        G = ((Pr - eye) + (Pc - eye)) / (2 * B) / TAU
        dZq, dZd = G @ Zd, G.T @ Zq
        dXq = (dZq - Zq * (dZq * Zq).sum(axis=1, keepdims=True)) / nq
        dXd = (dZd - Zd * (dZd * Zd).sum(axis=1, keepdims=True)) / nd
        dRU = Sq.T @ dXq + Sd.T @ dXd  # the loss's gradient at each batch token's vector
        gw = np.zeros_like(w)
        gw[U] = (dRU * rowsU).sum(axis=1) + REG * (wU - 1.0)
        mw = b1 * mw + (1 - b1) * gw
        vw = b2 * vw + (1 - b2) * gw * gw
        w -= lr * (mw / (1 - b1**step)) / (np.sqrt(vw / (1 - b2**step)) + eps)
        if D is not None:
            gD = dRU * wU[:, None]
            mD[U] = b1 * mD[U] + (1 - b1) * gD
            vD[U] = b2 * vD[U] + (1 - b2) * gD * gD
            D[U] -= lr_rows * (mD[U] / (1 - b1**step)) / (np.sqrt(vD[U] / (1 - b2**step)) + eps)
        if step % 100 == 0 or step == 1:
            print(f"  step {step}: loss {loss:.3f} ({time.perf_counter() - t0:.0f}s)", flush=True)
    return w, D


def split_pairs(pairs):
    names = [(q[1:], i) for q, i in pairs if q.startswith("\0")]
    docs = [(q, i) for q, i in pairs if not q.startswith("\0")]
    return docs, names


def int8_rows(w, D) -> dict:
    """The artifact: the weights (float16) and the moved rows of D, each as int8
    with a float16 scale (memtree.recall.embeddings.adapted_table decodes it)."""
    import numpy as np

    assert D.shape[0] <= 1 << 16  # row indices fit uint16
    scale = (np.abs(D).max(axis=1) / 127).astype(np.float16)
    rows = np.flatnonzero(scale)  # the rows training moved (a scale under float16's range: not moved)
    scale = scale[rows]
    q = np.round(D[rows] / scale[:, None].astype(np.float32)).astype(np.int8)
    return {
        "token_weight": w.astype(np.float16),
        "delta_rows": rows.astype(np.uint16),
        "delta_q": q,
        "delta_scale": scale,
    }


def low_rank(D, rank: int):
    """D through its truncated SVD stored as two float16 factors, decoded: the
    alternative to int8_rows, printed for comparison."""
    import numpy as np

    P, S, Qt = np.linalg.svd(D, full_matrices=False)
    u, v = (P[:, :rank] * S[:rank]).astype(np.float16), Qt[:rank].astype(np.float16)
    return u.astype(np.float32) @ v.astype(np.float32), len(npz_bytes({"u": u, "v": v}))


def npz_bytes(art: dict) -> bytes:
    """The artifact's file content: np.savez_compressed, whose zip entries carry a
    fixed date, so the same arrays give the same bytes."""
    import io

    import numpy as np

    buf = io.BytesIO()
    np.savez_compressed(buf, **art)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    from memtree.recall.embeddings import adapted_table

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", help="where the sdists are kept (default ~/.cache/memtree-eval)")
    ap.add_argument("--out", default=OUT, help="the artifact to write")
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--dev-only", action="store_true", help="print the held-out figures of the shipped artifact")
    args = ap.parse_args(argv)
    root = fetch(broad_corpus.cache_dir(args.cache))
    rng = np.random.default_rng(SEED)
    base = Base()
    train_pairs: list[tuple[str, str]] = []
    dev: dict = {"docs": [], "names": [], "chunks": []}
    for name, _version, fname, _sha in PACKAGES:
        pairs, chunks = mine(os.path.join(root, fname[: -len(".tar.gz")]))
        if name in DEV:
            off = len(dev["chunks"])
            dev["chunks"] += chunks
            d, n = split_pairs(pairs)
            dev["docs"] += [(q, i + off) for q, i in d]
            dev["names"] += [(q, i + off) for q, i in n]
            continue
        d, n = split_pairs(pairs)
        d = [d[i] for i in rng.permutation(len(d))[:MAX_PAIRS_PER_PACKAGE]]
        n = [n[i] for i in rng.permutation(len(n))[: int(len(d) * SYMBOL_SHARE / (1 - SYMBOL_SHARE))]]
        train_pairs += [(q, chunks[i]) for q, i in d + n]
        print(f"{name}: {len(chunks)} chunks, {len(d)} docstring pairs, {len(n)} name pairs", flush=True)
    print(
        f"training pairs {len(train_pairs)} from {len(PACKAGES) - len(DEV)} packages; dev ({', '.join(sorted(DEV))}): "
        f"{len(dev['chunks'])} chunks, {len(dev['docs'])} docstring and {len(dev['names'])} name queries",
        flush=True,
    )

    def dev_figures(label, table, prepared=True):
        dv = pool(table, base.ids(dev["chunks"], prepared))
        for kind in ("docs", "names"):
            qv = pool(table, base.ids([q for q, _ in dev[kind]], prepared))
            r, mrr = retrieval(qv, dv, [i for _, i in dev[kind]])
            print(f"  dev {label:<34} {kind:<6} R@10 {r:.3f}  MRR@10 {mrr:.3f}", flush=True)

    def adapted(art):  # rounded to float16, as the provider keeps it
        return adapted_table(base.table, art).astype(np.float16).astype(np.float32)

    dev_figures("raw text, table", base.table, prepared=False)
    dev_figures("prepared text, table", base.table)
    if args.dev_only:
        with np.load(args.out, allow_pickle=False) as art:
            dev_figures(f"shipped {os.path.basename(args.out)}", adapted({k: art[k] for k in art.files}))
        return 0
    q_ids = base.ids([q for q, _ in train_pairs], True)
    texts = list(dict.fromkeys(d for _, d in train_pairs))
    index = {t: i for i, t in enumerate(texts)}
    chunk_ids = base.ids(texts, True)
    pairs = [(q_ids[k], index[d]) for k, (_, d) in enumerate(train_pairs) if q_ids[k].size]
    print(f"weights alone, {STEPS_WEIGHTS} steps (code1's recipe)", flush=True)
    w1, _ = train(base, pairs, chunk_ids, STEPS_WEIGHTS, LR)
    dev_figures("weights alone (code1's recipe)", adapted({"token_weight": w1.astype(np.float16)}))
    print(f"weights and row deltas, {args.steps} steps", flush=True)
    w, D = train(base, pairs, chunk_ids, args.steps, LR, LR_ROWS)
    moved = int(np.abs(D).max(axis=1).astype(bool).sum())
    print(f"  rows moved {moved} of {D.shape[0]}", flush=True)
    dev_figures("weights, full deltas (float32)", (base.table + D) * w[:, None])
    for rank in RANKS:
        decoded, size = low_rank(D, rank)
        dev_figures(f"weights, deltas rank {rank} ({size // 1024} KB)", (base.table + decoded) * w[:, None])
    art = int8_rows(w, D)
    data = npz_bytes(art)
    dev_figures(f"shipped: moved rows int8 ({len(data) // 1024} KB)", adapted(art))
    with open(args.out, "wb") as f:
        f.write(data)
    print(f"wrote {args.out} ({len(data) // 1024} KB, sha256 {hashlib.sha256(data).hexdigest()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
